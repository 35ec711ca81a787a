package gitstore

import (
	"strconv"
	"time"

	"github.com/git-lossless/git-lossless/internal/jsonscan"
)

// parseEventFast decodes a line in the form writers produce (jsonscan's
// plain form: a flat object of known keys, no white space, strings without
// escapes, integers, booleans) in one pass, without encoding/json. It
// returns ok=false for anything else (unknown keys, escapes, nulls, odd
// numbers, invalid JSON), and the caller decodes that with encoding/json;
// for every line it accepts, the result is the one encoding/json gives.
func parseEventFast(line []byte) (e Event, ok bool) {
	ok = jsonscan.Plain(line, func(key, raw []byte, quoted bool) bool {
		return setField(&e, key, raw, quoted)
	})
	return e, ok
}

// setField decodes one value into e; quoted says raw was a string's body,
// else raw is an integer, true or false (jsonscan.Plain checked).
func setField(e *Event, key, raw []byte, quoted bool) bool {
	str := func(p *string) bool {
		if !quoted {
			return false
		}
		*p = string(raw)
		return true
	}
	num := func(p *int64) bool {
		if quoted || raw[0] == 't' || raw[0] == 'f' {
			return false
		}
		v, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return false
		}
		*p = v
		return true
	}
	flag := func(p *bool) bool {
		if quoted {
			return false
		}
		switch string(raw) {
		case "true":
			*p = true
		case "false":
			*p = false
		default:
			return false
		}
		return true
	}
	switch string(key) {
	case "agent":
		return str(&e.Agent)
	case "blob":
		return str(&e.Blob)
	case "bytes":
		return num(&e.Bytes)
	case "excluded":
		return flag(&e.Excluded)
	case "harness":
		return str(&e.Harness)
	case "key":
		return str(&e.Key)
	case "op":
		return str((*string)(&e.Op))
	case "path":
		return str(&e.Path)
	case "path64":
		return str(&e.Path64)
	case "prev":
		return str(&e.Prev)
	case "repo":
		return str(&e.Repo)
	case "seq":
		return num(&e.Seq)
	case "session":
		return str(&e.Session)
	case "sha256":
		return str(&e.SHA256)
	case "sidechain":
		return flag(&e.Sidechain)
	case "source":
		return str(&e.Source)
	case "tokens":
		return num(&e.Tokens)
	case "tool":
		return str(&e.Tool)
	case "view":
		return str(&e.View)
	case "ts":
		if !quoted {
			return false
		}
		if len(raw) == 0 {
			e.TS = time.Time{} // encoding/json path: "" leaves ts zero
			return true
		}
		t, ok := parseTS(raw)
		if !ok {
			return false
		}
		e.TS = t
		return true
	}
	return false // unknown key: Extra, decoded by encoding/json
}

// parseTS parses the one timestamp form writers produce (tsLayout:
// 2006-01-02T15:04:05.000000000Z), giving what time.Parse(RFC3339Nano)
// gives; anything else (other forms, out-of-range fields) is left to
// time.Parse.
func parseTS(b []byte) (time.Time, bool) {
	if len(b) != len(tsLayout) || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' ||
		b[16] != ':' || b[19] != '.' || b[29] != 'Z' {
		return time.Time{}, false
	}
	num := func(s []byte) (int, bool) {
		n := 0
		for _, c := range s {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	year, ok1 := num(b[0:4])
	month, ok2 := num(b[5:7])
	day, ok3 := num(b[8:10])
	hour, ok4 := num(b[11:13])
	minute, ok5 := num(b[14:16])
	sec, ok6 := num(b[17:19])
	nsec, ok7 := num(b[20:29])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) || month < 1 || month > 12 || day < 1 ||
		day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
