package gitobj

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Commit is the part of a commit object its readers use. It is the one
// commit parser of the module: the event log reads its batch commits
// through it and receipts read the commits they name through it.
type Commit struct {
	Tree    string
	Parents []string
	// Time is the committer time in Unix seconds (already UTC in git's
	// encoding); HasTime says whether a committer line carried one.
	Time    int64
	HasTime bool
	// Message is everything after the blank line that ends the header.
	Message []byte
}

// ParseCommit parses a raw commit body. It fails when the tree or a
// parent is not a 40-hex id: such a commit is corrupt (git fsck says so),
// and a reader walking it would follow garbage.
func ParseCommit(body []byte) (Commit, error) {
	var c Commit
	hdr, msg, _ := bytes.Cut(body, []byte("\n\n"))
	c.Message = msg
	for _, line := range strings.Split(string(hdr), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "tree":
			c.Tree = v
		case "parent":
			c.Parents = append(c.Parents, v)
		case "committer":
			// "Name <email> 1767323100 +0100": the seconds are UTC already.
			if f := strings.Fields(v); len(f) >= 2 {
				if n, err := strconv.ParseInt(f[len(f)-2], 10, 64); err == nil {
					c.Time, c.HasTime = n, true
				}
			}
		}
	}
	if c.Tree == "" {
		return c, errors.New("commit has no tree")
	}
	if !IsID(c.Tree) {
		return c, fmt.Errorf("commit has a bad tree %q", c.Tree)
	}
	for _, p := range c.Parents {
		if !IsID(p) {
			return c, fmt.Errorf("commit has a bad parent %q", p)
		}
	}
	return c, nil
}

// EncodeCommit encodes a commit with one parent or none ("") whose author
// and committer are both ident ("Name <email>") at unix seconds, +0000.
func EncodeCommit(tree, parent, ident string, unix int64, msg string) []byte {
	b := commitHeader(tree, parent, ident, unix)
	b.WriteByte('\n')
	b.WriteString(msg)
	return b.Bytes()
}

func commitHeader(tree, parent, ident string, unix int64) *bytes.Buffer {
	var b bytes.Buffer
	b.WriteString("tree " + tree + "\n")
	if parent != "" {
		b.WriteString("parent " + parent + "\n")
	}
	stamp := strconv.FormatInt(unix, 10) + " +0000"
	b.WriteString("author " + ident + " " + stamp + "\n")
	b.WriteString("committer " + ident + " " + stamp + "\n")
	return &b
}

// EncodeSignedCommit is EncodeCommit with, when sign is not nil, a gpgsig
// header after the committer line holding what sign returns for the
// unsigned commit (an armored PGP signature); continuation lines start
// with one space, as git writes them.
func EncodeSignedCommit(tree, parent, ident string, unix int64, msg string, sign func(payload []byte) (string, error)) ([]byte, error) {
	payload := EncodeCommit(tree, parent, ident, unix, msg)
	if sign == nil {
		return payload, nil
	}
	sig, err := sign(append([]byte(nil), payload...))
	if err != nil {
		return nil, fmt.Errorf("sign commit: %w", err)
	}
	sig = strings.TrimRight(strings.ReplaceAll(sig, "\r\n", "\n"), "\n")
	if !strings.HasPrefix(sig, "-----BEGIN PGP SIGNATURE-----") {
		return nil, errors.New("sign commit: the signer returned no armored PGP signature")
	}
	out := commitHeader(tree, parent, ident, unix)
	out.WriteString("gpgsig ")
	out.WriteString(strings.ReplaceAll(sig, "\n", "\n "))
	out.WriteString("\n\n")
	out.WriteString(msg)
	return out.Bytes(), nil
}

// SplitCommitSignature splits a raw commit into the signed payload (the
// commit without its gpgsig header) and the armored signature, as `git
// verify-commit` does. sig is "" when the commit carries no gpgsig header.
func SplitCommitSignature(body []byte) (payload []byte, sig string) {
	hdr, msg, ok := bytes.Cut(body, []byte("\n\n"))
	if !ok {
		return body, ""
	}
	lines := strings.Split(string(hdr), "\n")
	var keep []string
	var sigLines []string
	in := false
	for _, l := range lines {
		switch {
		case in && strings.HasPrefix(l, " "):
			sigLines = append(sigLines, l[1:])
			continue
		case strings.HasPrefix(l, "gpgsig "):
			in = true
			sigLines = append(sigLines, strings.TrimPrefix(l, "gpgsig "))
			continue
		}
		in = false
		keep = append(keep, l)
	}
	if sigLines == nil {
		return body, ""
	}
	var p bytes.Buffer
	p.WriteString(strings.Join(keep, "\n"))
	p.WriteString("\n\n")
	p.Write(msg)
	return p.Bytes(), strings.Join(sigLines, "\n") + "\n"
}

// Tag is an annotated tag object.
type Tag struct {
	Object  string // what it points at
	Type    string // the object's type
	Name    string // the tag's own name (without refs/tags/)
	Tagger  string // "Name <email>"
	Time    int64  // Unix seconds
	Message string
}

// EncodeTag encodes an annotated tag of a commit.
func EncodeTag(target, name, tagger string, unix int64, msg string) []byte {
	var b bytes.Buffer
	b.WriteString("object " + target + "\ntype commit\ntag " + name + "\n")
	b.WriteString("tagger " + tagger + " " + strconv.FormatInt(unix, 10) + " +0000\n\n")
	b.WriteString(msg)
	return b.Bytes()
}

// ParseTag parses a raw tag body; it fails when the tag names no object.
func ParseTag(body []byte) (Tag, error) {
	var t Tag
	hdr, msg, _ := bytes.Cut(body, []byte("\n\n"))
	t.Message = string(msg)
	for _, line := range strings.Split(string(hdr), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "object":
			t.Object = v
		case "type":
			t.Type = v
		case "tag":
			t.Name = v
		case "tagger":
			if i := strings.LastIndex(v, "> "); i >= 0 {
				t.Tagger = v[:i+1]
				if f := strings.Fields(v[i+2:]); len(f) >= 1 {
					if sec, err := strconv.ParseInt(f[0], 10, 64); err == nil {
						t.Time = sec
					}
				}
			}
		}
	}
	if !IsID(t.Object) {
		return t, errors.New("tag names no object")
	}
	return t, nil
}

// TreeEntry is one entry of a tree object. Mode is as git writes it
// ("40000" for a subtree, "100644" for a file).
type TreeEntry struct {
	Mode, Name, ID string
}

// IsTree reports whether the entry is a subtree.
func (e TreeEntry) IsTree() bool { return e.Mode == "40000" }

// EncodeTree sorts entries git's way (a tree's name compares as if it
// ended in '/') and encodes them.
func EncodeTree(ents []TreeEntry) []byte {
	key := func(e TreeEntry) string {
		if e.IsTree() {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(ents, func(i, j int) bool { return key(ents[i]) < key(ents[j]) })
	var b bytes.Buffer
	for _, e := range ents {
		raw, _ := hex.DecodeString(e.ID)
		b.WriteString(e.Mode + " " + e.Name + "\x00")
		b.Write(raw)
	}
	return b.Bytes()
}

// ParseTree parses a raw tree body.
func ParseTree(body []byte) ([]TreeEntry, error) {
	var out []TreeEntry
	for len(body) > 0 {
		sp := bytes.IndexByte(body, ' ')
		nul := bytes.IndexByte(body, 0)
		if sp < 0 || nul < sp || len(body) < nul+21 {
			return nil, errors.New("malformed tree")
		}
		out = append(out, TreeEntry{Mode: string(body[:sp]), Name: string(body[sp+1 : nul]), ID: hex.EncodeToString(body[nul+1 : nul+21])})
		body = body[nul+21:]
	}
	return out, nil
}
