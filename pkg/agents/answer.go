package agents

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"

	"anet.dev/anet/pkg/reasons"
)

// MaxAnswerBytes bounds a final answer: it travels to the requester in one reply and through
// a privsep packet (128 KiB) on the way.
const MaxAnswerBytes = 64 << 10

// MaxOutputBytes bounds what ParseAnswer reads of an agent's stdout or answer file (JSON
// wrappers and event streams are larger than the answer they carry).
const MaxOutputBytes = 8 << 20

// ParseAnswer extracts the final answer from a finished run's stdout, or from files (keyed
// by AnswerSource.File, as ReadAnswerFile returns them). Errors carry the no_answer code and
// say what was missing; they never quote more than a short prefix of the agent's output.
func ParseAnswer(a AnswerSource, stdout []byte, files map[string][]byte) (string, error) {
	ans, err := parseAnswer(a, stdout, files)
	if err != nil {
		return "", fmt.Errorf("parse answer (%s): %w", a.Kind, err)
	}
	ans = strings.TrimSpace(ans)
	switch {
	case ans == "":
		return "", fmt.Errorf("parse answer (%s): %w", a.Kind, reasons.New(NoAnswer, "empty answer"))
	case len(ans) > MaxAnswerBytes:
		return "", fmt.Errorf("parse answer (%s): %w", a.Kind, reasons.New(NoAnswer, fmt.Sprintf("answer is %d bytes, more than %d", len(ans), MaxAnswerBytes)))
	case !utf8.ValidString(ans):
		return "", fmt.Errorf("parse answer (%s): %w", a.Kind, reasons.New(NoAnswer, "answer is not valid UTF-8"))
	}
	return ans, nil
}

func parseAnswer(a AnswerSource, stdout []byte, files map[string][]byte) (string, error) {
	if len(stdout) > MaxOutputBytes {
		return "", reasons.New(NoAnswer, fmt.Sprintf("stdout is %d bytes, more than %d", len(stdout), MaxOutputBytes))
	}
	switch a.Kind {
	case AnswerText:
		return string(stdout), nil
	case AnswerClaudeJSON:
		return claudeAnswer(stdout)
	case AnswerOpencodeJSON:
		return opencodeAnswer(stdout)
	case AnswerFile:
		b, ok := files[a.File]
		if !ok {
			return "", reasons.New(NoAnswer, "answer file "+a.File+" was not written")
		}
		return string(b), nil
	default:
		return "", fmt.Errorf("answer kind %q: unknown", a.Kind)
	}
}

// claudeAnswer reads the result object of `claude -p --output-format json`, e.g.
// {"type":"result","subtype":"success","is_error":false,"result":"…",…} (2.1.197). An API
// failure comes back as subtype "success" with is_error true and the error text as result.
func claudeAnswer(out []byte) (string, error) {
	var r struct {
		Type    string  `json:"type"`
		Subtype string  `json:"subtype"`
		IsError bool    `json:"is_error"`
		Result  *string `json:"result"`
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(&r); err != nil {
		return "", reasons.New(NoAnswer, "claude output is not a JSON result object: "+reasons.Clip(string(out), 80))
	}
	if dec.More() {
		return "", reasons.New(NoAnswer, "claude output has data after the result object")
	}
	if r.Type != "result" {
		return "", reasons.New(NoAnswer, fmt.Sprintf("claude output type %q, want \"result\"", r.Type))
	}
	if r.IsError || r.Subtype != "success" {
		msg := ""
		if r.Result != nil {
			msg = ": " + reasons.Clip(*r.Result, 200)
		}
		return "", reasons.New(NoAnswer, fmt.Sprintf("claude reported an error (subtype %q)%s", r.Subtype, msg))
	}
	if r.Result == nil {
		return "", reasons.New(NoAnswer, "claude result object has no result")
	}
	return *r.Result, nil
}

// opencodeAnswer reads `opencode run --format json` (1.18.33): one JSON event per line;
// {"type":"text","part":{"messageID":…,"text":…}} carries the assistant's text and
// {"type":"error","error":{"name":…,"data":{"message":…}}} a failure (e.g. an upstream 400). The answer is the text parts of the last message that had
// text, in order (earlier messages are steps before tool calls).
func opencodeAnswer(out []byte) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), MaxOutputBytes)
	var (
		last  string
		parts []string
	)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var ev struct {
			Type string `json:"type"`
			Part struct {
				MessageID string `json:"messageID"`
				Text      string `json:"text"`
			} `json:"part"`
			Error struct {
				Name string `json:"name"`
				Data struct {
					Message string `json:"message"`
				} `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			return "", reasons.New(NoAnswer, fmt.Sprintf("opencode output line %d is not JSON: %s", n, reasons.Clip(string(line), 80)))
		}
		switch ev.Type {
		case "error":
			return "", reasons.New(NoAnswer, "opencode reported an error: "+reasons.Clip(ev.Error.Name+": "+ev.Error.Data.Message, 200))
		case "text":
			if ev.Part.MessageID != last {
				last, parts = ev.Part.MessageID, nil
			}
			parts = append(parts, ev.Part.Text)
		}
	}
	if err := sc.Err(); err != nil {
		return "", reasons.New(NoAnswer, "opencode output: "+err.Error())
	}
	if len(parts) == 0 {
		return "", reasons.New(NoAnswer, "opencode output has no text event")
	}
	return strings.Join(parts, ""), nil
}

// ReadAnswerFile reads a's answer file from the run's work dir on the host, after every process
// of the run is gone. The work dir is the agent's: the name may be a symlink to an operator
// file, a FIFO or a huge file. It is read through os.Root (no path may leave workDir), only if
// it is a regular file and not a link, and at most MaxOutputBytes. A missing file is not an
// error: the result simply lacks it and ParseAnswer says so.
func ReadAnswerFile(workDir string, a AnswerSource) (map[string][]byte, error) {
	files := map[string][]byte{}
	if a.Kind != AnswerFile {
		return files, nil
	}
	if a.File == "" || strings.ContainsAny(a.File, "/\x00") || a.File == "." || a.File == ".." {
		return nil, fmt.Errorf("read answer file: name %q: want a plain file name", a.File)
	}
	root, err := os.OpenRoot(workDir)
	if err != nil {
		return nil, fmt.Errorf("read answer file: open work dir %s: %w", workDir, err)
	}
	defer root.Close()
	fi, err := root.Lstat(a.File)
	if errors.Is(err, fs.ErrNotExist) {
		return files, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read answer file %s: %w", a.File, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read answer file %s: %w", a.File, reasons.New(NoAnswer, "not a regular file ("+fi.Mode().Type().String()+")"))
	}
	f, err := root.OpenFile(a.File, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return nil, fmt.Errorf("read answer file %s: %w", a.File, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read answer file %s: %w", a.File, reasons.New(NoAnswer, "not a regular file"))
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxOutputBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read answer file %s: %w", a.File, err)
	}
	if len(b) > MaxOutputBytes {
		return nil, fmt.Errorf("read answer file %s: %w", a.File, reasons.New(NoAnswer, fmt.Sprintf("larger than %d bytes", MaxOutputBytes)))
	}
	files[a.File] = b
	return files, nil
}
