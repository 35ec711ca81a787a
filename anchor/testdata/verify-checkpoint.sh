# Checks a signed git-lossless checkpoint with openssl: ./verify-checkpoint.sh CHECKPOINT KEY.PUB
set -eu
note=$1 vkey=$(cat "$2")
name=${vkey%%+*} rest=${vkey#*+} keyb64=${rest#*+}
# The signed text: everything before the blank line, with its last newline.
sed '/^$/,$d' "$note" > text
# The signature line "— <name> <base64>": 4 bytes of key hash, then 64 of signature.
grep -q "^— $name " "$note"
sed -n "s/^— $name //p" "$note" | base64 -d | tail -c 64 > sig
# The public key: its data after the algorithm byte (01 = Ed25519), as a PEM
# SubjectPublicKeyInfo (the fixed DER prefix of an Ed25519 key, then the key).
{ printf '302a300506032b6570032100'; printf '%s' "$keyb64" | base64 -d | tail -c 32 | xxd -p -c 64; } | xxd -r -p > pub.der
openssl pkey -pubin -inform DER -in pub.der -out pub.pem
openssl pkeyutl -verify -pubin -inkey pub.pem -rawin -in text -sigfile sig
grep -E '^(machine|clone|n|time|prev|writer|notes) ' text
