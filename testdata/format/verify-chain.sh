# Verify writer W's whole chain and content with plain git and sha256sum:
# what `git lossless verify W` checks, less the witness. Run inside the
# repository; prints the pruned entries, then OK, or the first break and
# exits 1.
W=golden
R=refs/lossless/$W
field() { sed -n "s/.*\"$1\":\"\([0-9a-f]*\)\".*/\1/p"; }
pruned=$(git rev-list "$R" | while read -r c; do git cat-file -p "$c:events.jsonl"; done |
  grep '"op":"prune"' | grep -o '"blob":"[0-9a-f]*"')
prev=$(printf 'git-lossless seal v1 %s' "$W" | sha256sum | cut -c1-64)
n=0
for c in $(git rev-list --first-parent --reverse "$R"); do
  while IFS= read -r line; do
    n=$((n + 1))
    got=$(printf '%s' "$line" | field prev)
    [ "$got" = "$prev" ] || { echo "entry $n: prev $got, expected $prev"; exit 1; }
    prev=$(printf '%s' "$line" | sha256sum | cut -c1-64)
    case $line in *'"op":"prune"'*) continue ;; esac
    blob=$(printf '%s' "$line" | field blob)
    [ -n "$blob" ] || continue
    if ! git cat-file -e "$c:blobs/$blob" 2>/dev/null; then
      case $pruned in *"$blob"*) echo "entry $n: pruned"; continue ;; esac
      echo "entry $n: blob $blob is missing"; exit 1
    fi
    want=$(printf '%s' "$line" | field sha256)
    got=$(git cat-file blob "$blob" | sha256sum | cut -c1-64)
    [ "$got" = "$want" ] || { echo "entry $n: blob $blob hashes to $got, expected $want"; exit 1; }
  done < <(git cat-file -p "$c:events.jsonl")
  seal=$(git cat-file -p "$c" | sed -n 's/^Lossless-Seal: //p')
  [ "$seal" = "$prev" ] || { echo "commit $c: Lossless-Seal $seal, entries hash to $prev"; exit 1; }
done
echo "OK $W: $n entries, head $prev"
