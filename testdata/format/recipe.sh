# Check one entry of writer W with plain git, sed, tr and sha256sum.
# Run inside the repository. Each group prints lines that must be equal
# (sha256sum appends "  -", the name of its standard input).
W=golden
R=refs/lossless/$W    # the writer's head batch; $R~1 is the batch before

# 1. The first entry's prev is the writer's genesis value.
printf 'git-lossless seal v1 %s' "$W" | sha256sum
git cat-file -p "$R~1:events.jsonl" | sed -n 1p | sed 's/.*"prev":"\([0-9a-f]*\)".*/\1/'

# 2. Entry 1's line (without its newline) hashes to entry 2's prev.
git cat-file -p "$R~1:events.jsonl" | sed -n 1p | tr -d '\n' | sha256sum
git cat-file -p "$R~1:events.jsonl" | sed -n 2p | sed 's/.*"prev":"\([0-9a-f]*\)".*/\1/'

# 3. A batch's last line hashes to its commit's Lossless-Seal, which the
#    next batch's first line names as prev.
git cat-file -p "$R~1:events.jsonl" | tail -n 1 | tr -d '\n' | sha256sum
git cat-file -p "$R~1" | sed -n 's/^Lossless-Seal: //p'
git cat-file -p "$R:events.jsonl" | sed -n 1p | sed 's/.*"prev":"\([0-9a-f]*\)".*/\1/'

# 4. Entry 1's content hashes to its sha256, and git names it by its blob.
B=$(git cat-file -p "$R~1:events.jsonl" | sed -n 1p | sed 's/.*"blob":"\([0-9a-f]*\)".*/\1/')
git cat-file -p "$B" | sha256sum
git cat-file -p "$R~1:events.jsonl" | sed -n 1p | sed 's/.*"sha256":"\([0-9a-f]*\)".*/\1/'
git cat-file -p "$B" | git hash-object --stdin
echo "$B"
