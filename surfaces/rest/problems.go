package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/grantwire/grantwire"
	"github.com/grantwire/grantwire/hostabi"
	"github.com/grantwire/grantwire/internal/jsonx"
)

// maxBody bounds a request body.
const maxBody = 1 << 20

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// problem answers an error of the server's own, met before or around an operation (a
// missing header, a foreign Host, a body that is not JSON, an unknown route or flow, a
// cancelled request): {"error": {code, message, summary, fix, status}}, the shape of the
// policy's errors. Its status is the one the policy publishes for the code (errors.table),
// as for an operation's error; the server invents no code (TestEveryCodeIsThePolicys).
func (s *Server) problem(w http.ResponseWriter, code, msg, fix string) {
	status := http.StatusInternalServerError
	if info, ok := s.client.Engine().Manifest().Errors[code]; ok {
		status = info.Status
	} else {
		s.log.Error("an error code the policy does not publish", "code", code)
	}
	full := msg
	if fix != "" {
		full = msg + "; fix: " + fix
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": code, "message": full, "summary": msg, "fix": fix, "status": status}})
}

// errorBody is an operation's error as the API shows it: every field the policy gives it,
// and its REST status.
func errorBody(ge *grantwire.Error) map[string]any {
	out := map[string]any{}
	for k, v := range ge.Fields {
		out[k] = v
	}
	out["code"], out["message"], out["summary"], out["fix"], out["status"] = ge.Code, ge.Message, ge.Summary, ge.Fix, ge.Status
	return out
}

// fail answers err: a *grantwire.Error with the status the policy publishes (BUSY with
// Retry-After), a cancellation as 499-like 503, anything else as INTERNAL.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ge *grantwire.Error
	if errors.As(err, &ge) {
		if ge.RetryAfter > 0 {
			secs := int((ge.RetryAfter + 999_999_999) / 1_000_000_000)
			w.Header().Set("Retry-After", strconv.Itoa(secs))
		}
		s.log.Info("operation failed", "path", r.URL.Path, "code", ge.Code, "summary", ge.Summary)
		writeJSON(w, ge.Status, map[string]any{"error": errorBody(ge)})
		return
	}
	var he *hostabi.HostError
	if errors.As(err, &he) {
		s.log.Warn("host failure", "path", r.URL.Path, "code", he.Code, "detail", he.Detail)
		s.problem(w, "IO_ERROR", he.Detail, he.Fix)
		return
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, hostabi.ErrCanceled) {
		s.problem(w, "CANCELLED", "the request was cancelled (the server is stopping, or the client went away)", "")
		return
	}
	s.log.Error("internal error", "path", r.URL.Path, "error", err.Error())
	s.problem(w, "INTERNAL", "internal error: "+err.Error(), "")
}

// decode reads a JSON body into v: at most maxBody bytes, no unknown members, one value.
// An empty body decodes as {} when emptyOK.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any, emptyOK bool) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		s.problem(w, "BODY_TOO_LARGE", fmt.Sprintf("the body is larger than %d bytes", maxBody), "")
		return false
	}
	if len(body) == 0 && emptyOK {
		body = []byte("{}")
	}
	if err := jsonx.UnmarshalKnown(body, v); err != nil {
		s.problem(w, "USAGE", "usage: the body must be a JSON object: "+err.Error(), "")
		return false
	}
	return true
}
