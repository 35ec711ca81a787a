package gemini

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

// Dir is the Gemini CLI's global directory for user ~: where it keeps
// settings.json, projects.json and tmp/<project>/chats. The CLI takes the
// home directory from GEMINI_CLI_HOME when set, else the user's home
// (HOME here); under the macOS sandbox (SANDBOX=sandbox-exec) its runtime
// files, chats included, are in ~/.cache/.gemini instead.
func Dir(getenv func(string) string) (string, error) {
	home := getenv("GEMINI_CLI_HOME")
	if home == "" {
		home = getenv("HOME")
	}
	if home == "" {
		return "", errors.New("gemini: neither GEMINI_CLI_HOME nor HOME is set")
	}
	if !filepath.IsAbs(home) {
		return "", fmt.Errorf("gemini: home directory %q is not absolute", home)
	}
	if getenv("SANDBOX") == "sandbox-exec" {
		return filepath.Join(home, ".cache", ".gemini"), nil
	}
	return filepath.Join(home, ".gemini"), nil
}

// ChatFile is a chat file found under <Dir>/tmp/<project>/chats: a main
// chat (chats/session-<time>-<id8>.jsonl) or a subagent's
// (chats/<parent session id>/<subagent id>.jsonl).
type ChatFile struct {
	Path string
	// Project is the name of the project's directory under tmp (the
	// short name projects.json gives it, or a legacy sha256 hex).
	Project string
	// ProjectDir is the directory the CLI ran in, when known: the entry
	// of projects.json (or the .project_root marker) whose sha256 is the
	// chat's projectHash, else the one the short name maps to. "" when
	// nothing says.
	ProjectDir string
	SessionID  string // the session (a subagent's: its parent's)
	Agent      string // the subagent's id; "" for a main chat
	Size       int64
	ModTime    time.Time
}

// Options is the ChatOptions to read the file with.
func (f ChatFile) Options() ChatOptions {
	return ChatOptions{SessionID: f.SessionID, Agent: f.Agent, Cwd: f.ProjectDir}
}

// ChatSkip is a file under a chats directory not taken, and why.
type ChatSkip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Reasons of ChatSkip.
const (
	SkipNotChat     = "not a chat file (only *.jsonl files are)"
	SkipLegacyJSON  = "a chat in the CLI's old .json format (the CLI converts it on resume)"
	SkipNotRegular  = "not a regular file"
	SkipSymlink     = "symbolic link (not followed)"
	SkipUnreadable  = "unreadable"
	SkipNoSessionID = "no session id (header without sessionId)"
)

// Projects reads <dir>/projects.json, the CLI's project registry, as a
// map from a project's short name to its directory. A missing file is
// an empty map; one the CLI would not accept (not {"projects":{dir:name}})
// is an error.
func Projects(dir string) (map[string]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "projects.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	var reg struct {
		Projects map[string]string `json:"projects"`
	}
	if err := json.Unmarshal(b, &reg); err != nil {
		return nil, fmt.Errorf("gemini: %s: %w", filepath.Join(dir, "projects.json"), err)
	}
	out := make(map[string]string, len(reg.Projects))
	for d, name := range reg.Projects {
		if filepath.IsAbs(d) && name != "" {
			out[name] = filepath.Clean(d)
		}
	}
	return out, nil
}

// FindChats lists every chat file under <dir>/tmp/*/chats, main chats and
// subagents' chats, with the session, agent and project directory each
// belongs to (reading each file's first line), sorted by path. Files it
// does not take are listed with the reason. Symbolic links are not
// followed. A missing tmp directory is no chats.
func FindChats(dir string) ([]ChatFile, []ChatSkip, error) {
	projects, err := Projects(dir)
	if err != nil {
		return nil, nil, err
	}
	tmp := filepath.Join(dir, "tmp")
	ents, err := os.ReadDir(tmp)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("gemini: %w", err)
	}
	byHash := map[string]string{}
	for _, d := range projects {
		byHash[projectHash(d)] = d
	}
	var chats []ChatFile
	var skips []ChatSkip
	for _, pe := range ents {
		if !pe.IsDir() {
			continue
		}
		project := pe.Name()
		pdir := filepath.Join(tmp, project)
		chatsDir := filepath.Join(pdir, "chats")
		if fi, err := os.Lstat(chatsDir); err != nil || !fi.IsDir() {
			continue
		}
		marker := ""
		if b, err := os.ReadFile(filepath.Join(pdir, ".project_root")); err == nil {
			if m := strings.TrimSpace(string(b)); filepath.IsAbs(m) {
				marker = filepath.Clean(m)
				byHash[projectHash(marker)] = marker
			}
		}
		// Where the project is when a chat's projectHash names none.
		fallback := projects[project]
		if fallback == "" {
			fallback = marker
		}
		if d, ok := byHash[project]; ok && fallback == "" {
			fallback = d // a legacy directory named by the hash
		}
		take := func(path, parent string) {
			fi, err := os.Lstat(path)
			switch {
			case err != nil:
				skips = append(skips, ChatSkip{path, SkipUnreadable})
				return
			case fi.Mode()&fs.ModeSymlink != 0:
				skips = append(skips, ChatSkip{path, SkipSymlink})
				return
			case !fi.Mode().IsRegular():
				skips = append(skips, ChatSkip{path, SkipNotRegular})
				return
			}
			h, err := readHeader(path)
			if err != nil {
				skips = append(skips, ChatSkip{path, SkipUnreadable})
				return
			}
			cf := ChatFile{Path: path, Project: project, Size: fi.Size(), ModTime: fi.ModTime(), ProjectDir: fallback}
			if d, ok := byHash[h.projectHash]; ok {
				cf.ProjectDir = d
			}
			if parent != "" {
				cf.SessionID = parent
				cf.Agent = strings.TrimSuffix(filepath.Base(path), ".jsonl")
				if h.sessionID != "" && h.kind == "subagent" {
					cf.Agent = h.sessionID
				}
			} else {
				cf.SessionID = h.sessionID
			}
			if cf.SessionID == "" {
				skips = append(skips, ChatSkip{path, SkipNoSessionID})
				return
			}
			chats = append(chats, cf)
		}
		walk := func(d, parent string) []fs.DirEntry {
			es, err := os.ReadDir(d)
			if err != nil {
				skips = append(skips, ChatSkip{d, SkipUnreadable})
				return nil
			}
			for _, e := range es {
				p := filepath.Join(d, e.Name())
				switch {
				case e.IsDir():
				case strings.HasSuffix(e.Name(), ".jsonl"):
					take(p, parent)
				case strings.HasSuffix(e.Name(), ".json") && parent == "":
					skips = append(skips, ChatSkip{p, SkipLegacyJSON})
				default:
					skips = append(skips, ChatSkip{p, SkipNotChat})
				}
			}
			return es
		}
		for _, e := range walk(chatsDir, "") {
			if e.IsDir() && validID(e.Name()) {
				walk(filepath.Join(chatsDir, e.Name()), e.Name())
			}
		}
	}
	sort.Slice(chats, func(i, j int) bool { return chats[i].Path < chats[j].Path })
	sort.Slice(skips, func(i, j int) bool { return skips[i].Path < skips[j].Path })
	return chats, skips, nil
}

// projectHash is the CLI's projectHash of a project directory.
func projectHash(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return hex.EncodeToString(sum[:])
}

// header is what a chat's first line says.
type header struct {
	sessionID, projectHash, kind string
}

// readHeader reads a chat file's first line (a header is small: a first
// line longer than 64 KiB is none).
func readHeader(path string) (header, error) {
	var h header
	f, err := os.Open(path)
	if err != nil {
		return h, err
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 64<<10).ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return h, nil
	case err != nil && !errors.Is(err, io.EOF):
		return h, err
	}
	f2, _ := fields(line, "sessionId", "projectHash", "kind")
	h.sessionID, _ = jsonscan.String(f2["sessionId"])
	h.projectHash, _ = jsonscan.String(f2["projectHash"])
	h.kind, _ = jsonscan.String(f2["kind"])
	return h, nil
}

// ChatFileOf describes the one chat file at path as FindChats would:
// <dir>/tmp/<project>/chats/<main>.jsonl or
// <dir>/tmp/<project>/chats/<session id>/<subagent>.jsonl, with its
// session, agent and project directory. ok is false for a path of any
// other shape; a file whose header cannot be read keeps what its path
// says (a subagent's session and id; nothing for a main chat).
func ChatFileOf(path string) (cf ChatFile, ok bool) {
	if !strings.HasSuffix(path, ".jsonl") {
		return cf, false
	}
	dir := filepath.Dir(path)
	parent := ""
	if filepath.Base(dir) != "chats" {
		parent = filepath.Base(dir)
		dir = filepath.Dir(dir)
		if filepath.Base(dir) != "chats" || !validID(parent) {
			return cf, false
		}
	}
	pdir := filepath.Dir(dir)
	if filepath.Base(filepath.Dir(pdir)) != "tmp" {
		return cf, false
	}
	cf = ChatFile{Path: path, Project: filepath.Base(pdir)}
	h, _ := readHeader(path)
	if parent != "" {
		cf.SessionID = parent
		cf.Agent = strings.TrimSuffix(filepath.Base(path), ".jsonl")
		if h.sessionID != "" && h.kind == "subagent" {
			cf.Agent = h.sessionID
		}
	} else {
		cf.SessionID = h.sessionID
	}
	cf.ProjectDir = projectDirOf(filepath.Dir(filepath.Dir(pdir)), pdir, h.projectHash)
	return cf, true
}

// projectDirOf is the directory a project's chats ran in, as FindChats
// finds it: the projects.json entry (or .project_root marker) whose
// sha256 is the chat's projectHash, else the one the project's short
// name maps to, else the marker. "" when nothing says.
func projectDirOf(geminiDir, pdir, hash string) string {
	projects, _ := Projects(geminiDir)
	marker := ""
	if b, err := os.ReadFile(filepath.Join(pdir, ".project_root")); err == nil {
		if m := strings.TrimSpace(string(b)); filepath.IsAbs(m) {
			marker = filepath.Clean(m)
		}
	}
	if hash != "" {
		for _, d := range projects {
			if projectHash(d) == hash {
				return d
			}
		}
		if marker != "" && projectHash(marker) == hash {
			return marker
		}
	}
	if d := projects[filepath.Base(pdir)]; d != "" {
		return d
	}
	return marker
}
