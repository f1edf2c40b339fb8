package authserver

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grantwire/grantwire/internal/jsonx"
)

// Worlds is the control API through which a runner in another language (the Node shell's
// run.mjs, the Python shell's) plays the corpus against this server over HTTP: it creates
// one world per scenario, a fresh server as NewWorld makes it with a simulated clock,
// scripts it, sets its clock and reads its counters. Every body is JSON; an error is
// answered 400 (404 for an unknown world) with {"error": "..."} naming the fix.
//
//	POST   /worlds                          {"now_ms": N}  → 201 {"id": "1", "url": "http://127.0.0.1:PORT/worlds/1"}
//	DELETE /worlds/{id}                     → 204
//	POST   {url}/control/script             a Script (the scenario's token_server, staged piece by piece) → 204
//	PUT    {url}/control/clock              {"now_ms": N}: the time the server judges expiry by → 204
//	GET    {url}/control/counters           → Counters
//	POST   {url}/control/browser            {"provider": "google"} → {"outcome": ""|"timeout"|"interactive_required"}
//	POST   {url}/control/prompt             {"provider": "microsoft"} → {"unattended": false}
//	ANY    {url}/url/<scheme>/<host>/<path> the catalog URL <scheme>://<host>/<path> (CatalogPath)
//
// The runner's HTTP capability sends each request of its host for a catalog URL u to
// {url} + CatalogPath(u), setting the clock first whenever its simulated clock moved; an
// answer carrying the Grantwire-During header is one during which another process acts
// (Reply.During): the runner performs that action before handing the answer on. Its
// loopback asks browser before it opens an authorization ("interactive_required": no
// browser here; "timeout": nobody will answer), then follows the authorization URL up to
// the redirect to its loopback address (the callback's parameters are that redirect's
// query); its device prompt asks prompt (unattended: nobody reads the code). Its final
// check compares the counters with the scenario's final.token_server.
type Worlds struct {
	mu     sync.Mutex
	next   int
	worlds map[string]*controlled
	mux    *http.ServeMux
}

// controlled is one world of the control API.
type controlled struct {
	srv     *Server
	nowMS   atomic.Int64
	handler http.Handler
}

// Counters are a world's counters, named as the corpus's final.token_server names them:
// refresh requests (answered or refused, scripted ones included), authorization-code
// requests, revocation requests, refresh tokens revoked, and how every token request
// authenticated its client (client_secret_basic, client_secret_post, none or mixed).
type Counters struct {
	Requests    int      `json:"requests"`
	Exchanges   int      `json:"exchanges"`
	Revocations int      `json:"revocations"`
	Revoked     int      `json:"revoked"`
	ClientAuth  []string `json:"client_auth"`
}

// CountersOf reads a server's counters.
func CountersOf(s *Server) Counters {
	st := s.Stats()
	return Counters{Requests: st.RefreshRequests, Exchanges: st.ExchangeRequests, Revocations: st.Revocations,
		Revoked: st.RevokedTokens, ClientAuth: append([]string{}, s.ClientAuthSeen()...)}
}

// ServeWorlds serves the control API (NewWorlds) on a free port of 127.0.0.1, for a
// foreign shell's runner or a test: it returns the server's URL and stop, which closes it.
func ServeWorlds() (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: NewWorlds(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// NewWorlds returns the control API's handler, with no world yet.
func NewWorlds() *Worlds {
	ws := &Worlds{worlds: map[string]*controlled{}, mux: http.NewServeMux()}
	ws.mux.HandleFunc("POST /worlds", ws.create)
	ws.mux.HandleFunc("DELETE /worlds/{id}", func(w http.ResponseWriter, r *http.Request) {
		ws.mu.Lock()
		_, ok := ws.worlds[r.PathValue("id")]
		delete(ws.worlds, r.PathValue("id"))
		ws.mu.Unlock()
		if !ok {
			controlError(w, http.StatusNotFound, "no world "+r.PathValue("id")+": create one with POST /worlds")
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	ws.control("POST /worlds/{id}/control/script", func(c *controlled, body []byte) (any, error) {
		var sc Script
		if err := jsonx.UnmarshalKnown(body, &sc); err != nil {
			return nil, fmt.Errorf("the script: %w", err)
		}
		return nil, c.srv.Load(sc)
	})
	ws.control("PUT /worlds/{id}/control/clock", func(c *controlled, body []byte) (any, error) {
		var v struct {
			NowMS *int64 `json:"now_ms"`
		}
		if err := jsonx.UnmarshalKnown(body, &v); err != nil || v.NowMS == nil {
			return nil, errors.New(`the clock: send {"now_ms": <Unix milliseconds>}`)
		}
		c.nowMS.Store(*v.NowMS)
		return nil, nil
	})
	ws.control("GET /worlds/{id}/control/counters", func(c *controlled, _ []byte) (any, error) {
		return CountersOf(c.srv), nil
	})
	ws.control("POST /worlds/{id}/control/browser", func(c *controlled, body []byte) (any, error) {
		p, err := providerOf(body)
		return map[string]string{"outcome": c.srv.Browser(p)}, err
	})
	ws.control("POST /worlds/{id}/control/prompt", func(c *controlled, body []byte) (any, error) {
		p, err := providerOf(body)
		return map[string]bool{"unattended": c.srv.Unattended(p)}, err
	})
	ws.mux.HandleFunc("/worlds/{id}/", func(w http.ResponseWriter, r *http.Request) {
		if c := ws.world(w, r); c != nil {
			c.handler.ServeHTTP(w, r)
		}
	})
	return ws
}

// ServeHTTP implements http.Handler.
func (ws *Worlds) ServeHTTP(w http.ResponseWriter, r *http.Request) { ws.mux.ServeHTTP(w, r) }

func (ws *Worlds) create(w http.ResponseWriter, r *http.Request) {
	var v struct {
		NowMS int64 `json:"now_ms"`
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err == nil && len(body) > 0 {
		err = jsonx.UnmarshalKnown(body, &v)
	}
	if err != nil {
		controlError(w, http.StatusBadRequest, `a world: send {"now_ms": <Unix milliseconds>} or nothing`)
		return
	}
	c := &controlled{}
	c.nowMS.Store(v.NowMS)
	c.srv = NewWorld(func() time.Time { return time.UnixMilli(c.nowMS.Load()) })
	ws.mu.Lock()
	ws.next++
	id := strconv.Itoa(ws.next)
	ws.worlds[id] = c
	ws.mu.Unlock()
	c.handler = http.StripPrefix("/worlds/"+id, c.srv.Handler())
	writeJSON(w, http.StatusCreated, map[string]string{"id": id, "url": "http://" + r.Host + "/worlds/" + id})
}

func (ws *Worlds) world(w http.ResponseWriter, r *http.Request) *controlled {
	ws.mu.Lock()
	c := ws.worlds[r.PathValue("id")]
	ws.mu.Unlock()
	if c == nil {
		controlError(w, http.StatusNotFound, "no world "+r.PathValue("id")+": create one with POST /worlds")
	}
	return c
}

// control serves one control endpoint of a world: f answers the JSON body (nil: 204).
func (ws *Worlds) control(pattern string, f func(c *controlled, body []byte) (any, error)) {
	ws.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		c := ws.world(w, r)
		if c == nil {
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<20))
		var out any
		if err == nil {
			out, err = f(c, body)
		}
		switch {
		case err != nil:
			controlError(w, http.StatusBadRequest, err.Error())
		case out == nil:
			w.WriteHeader(http.StatusNoContent)
		default:
			writeJSON(w, http.StatusOK, out)
		}
	})
}

func providerOf(body []byte) (string, error) {
	var v struct {
		Provider string `json:"provider"`
	}
	if err := jsonx.UnmarshalKnown(body, &v); err != nil || v.Provider == "" {
		return "", errors.New(`send {"provider": "<catalog id>"}`)
	}
	return v.Provider, nil
}

func controlError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": "authserver: " + msg})
}
