# The placeholder key and the two ids of the redaction vector, with
# sha256sum and openssl alone (FORMAT.md section 17).
identity='AGE-SECRET-KEY-1QPZRY9X8QPZRY9X8QPZRY9X8QPZRY9X8QPZRY9X8QPZRY9X8QPZRY9X8GF'
key=$(printf 'git-lossless placeholder id v1\n%s' "$identity" | sha256sum | cut -c1-64)
echo "$key"
id() { printf '%s\0%s' "$1" "$2" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$key" | sed 's/^.*= //' | cut -c1-12; }
id github-token 'ghp_Zq3vX9kL2mN8pR4tW7yB1cD5fH6jK0sA2eG4'
id password 'hunter2-x7Qm'
