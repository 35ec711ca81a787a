package gitstore

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"
)

// Query selects events. Zero fields match everything.
type Query struct {
	Writers []string // writer names
	Session string
	// Agent selects one context: a subagent id, or MainAgent for the main
	// context (events with no agent).
	Agent  string
	Path   string // exact path, or a doublestar glob when it has glob syntax
	Op     string
	Source string
	Key    string
	Since  time.Time // inclusive
	Until  time.Time // exclusive
	Limit  int       // keep the last Limit events (0: all)
}

// MainAgent selects a main context's events in Query.Agent.
const MainAgent = "main"

// Events returns the matching events of every writer, merged in time order
// (ties: writer name, then seq).
func (s *Store) Events(ctx context.Context, q Query) ([]Event, error) {
	refs, err := s.refs.list(RefPrefix)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, w := range q.Writers {
		want[w] = true
	}
	isGlob := q.Path != "" && strings.ContainsAny(q.Path, "*?[{")
	var needles [][]byte
	if q.Session != "" {
		needles = append(needles, append([]byte(`"session":`), jsonString(q.Session)...))
	}
	if q.Agent != "" && q.Agent != MainAgent {
		needles = append(needles, append([]byte(`"agent":`), jsonString(q.Agent)...))
	}
	if q.Path != "" && !isGlob {
		needles = append(needles, append([]byte(`"path":`), jsonString(q.Path)...))
	}
	if q.Op != "" {
		needles = append(needles, append([]byte(`"op":`), jsonString(q.Op)...))
	}
	if q.Key != "" {
		needles = append(needles, append([]byte(`"key":`), jsonString(q.Key)...))
	}

	var out []Event
	for ref, id := range refs {
		writer := strings.TrimPrefix(ref, RefPrefix)
		if len(want) > 0 && !want[writer] {
			continue
		}
		lines, err := s.linesAtRef(ctx, writer, id)
		if err != nil {
			s.warn(fmt.Sprintf("skipping writer %s: %v", writer, err))
			continue
		}
	line:
		for _, l := range lines {
			for _, n := range needles {
				if !bytes.Contains(l, n) {
					continue line
				}
			}
			e, err := ParseEvent(l)
			if err != nil {
				s.warn(fmt.Sprintf("writer %s: %v", writer, err))
				continue
			}
			if !q.match(&e, isGlob) {
				continue
			}
			e.Writer = writer
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := &out[i], &out[j]
		if !a.TS.Equal(b.TS) {
			return a.TS.Before(b.TS)
		}
		if a.Writer != b.Writer {
			return a.Writer < b.Writer
		}
		return a.Seq < b.Seq
	})
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[len(out)-q.Limit:]
	}
	return out, nil
}

func (q *Query) match(e *Event, isGlob bool) bool {
	if q.Session != "" && e.Session != q.Session {
		return false
	}
	if q.Agent == MainAgent && e.Agent != "" {
		return false
	}
	if q.Agent != "" && q.Agent != MainAgent && e.Agent != q.Agent {
		return false
	}
	if q.Path != "" {
		if isGlob {
			if ok, _ := doublestar.Match(q.Path, e.Path); !ok {
				return false
			}
		} else if e.Path != q.Path {
			return false
		}
	}
	if q.Op != "" && e.Op != q.Op {
		return false
	}
	if q.Source != "" && e.Source != q.Source {
		return false
	}
	if q.Key != "" && e.Key != q.Key {
		return false
	}
	if !q.Since.IsZero() && e.TS.Before(q.Since) {
		return false
	}
	if !q.Until.IsZero() && !e.TS.Before(q.Until) {
		return false
	}
	return true
}

// linesAtRef returns a writer's lines at ref value id, trusting the index
// without reading any object when it is current.
func (s *Store) linesAtRef(ctx context.Context, writer, id string) ([][]byte, error) {
	if ih, ok := s.readIndexHead(writer); ok && ih.Commit == id {
		if lines, ok := s.readIndex(writer, ih); ok {
			return lines, nil
		}
	}
	h, err := s.headAt(id)
	if err != nil {
		return nil, err
	}
	return s.writerLines(ctx, writer, h)
}
