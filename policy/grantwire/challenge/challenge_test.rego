package grantwire.challenge_test

import data.grantwire.challenge
import data.grantwire.fixtures_test as fx

_c := "mcp-remote"

_d(args) := fx.decide(fx.q("mcp_challenge", object.union({"connector": _c}, args), {}))

_action(args) := _d(args).result.action

_code(args) := _d(args).error.code

_b64(s) := base64url.encode(s)

_scope_challenge := _b64(`Bearer error="insufficient_scope", scope="files:write files:read"`)

test_bad_arguments if {
	every args in [
		{}, {"status": 401}, {"status": "401", "sent": "none"}, {"status": 401, "sent": "mine"},
		{"status": 401.5, "sent": "none"}, {"status": 401, "sent": "none", "uses": -1},
		{"status": 401, "sent": "none", "authorizations": 1.5}, {"status": 401, "sent": "none", "refreshed": "yes"},
		{"status": 401, "sent": "none", "www_authenticate": 7},
	] {
		_code(args) == "USAGE"
	}
	_code({"status": 401, "sent": "none", "connector": 3}) == "USAGE"
}

test_a_refused_current_token_is_refreshed_first if {
	every sent in ["current", "fresh"] {
		_action({"status": 401, "sent": sent}) == "refresh"
	}
	not _d({"status": 401, "sent": "current"}).needs
}

test_then_an_authorization_with_the_challenge if {
	every sent in ["none", "other"] {
		_action({"status": 401, "sent": sent}) == "authorize"
	}
	_action({"status": 401, "sent": "current", "refreshed": true}) == "authorize"
	_action({"status": 401, "sent": "fresh", "refreshed": true, "uses": 2}) == "authorize"
	_d({"status": 401, "sent": "none", "www_authenticate": _b64(`Bearer scope="a b"`)}).result.scopes == ["a", "b"]
	_d({"status": 401, "sent": "none"}).result.scopes == []
}

test_a_fresh_token_refused_at_once_fails if {
	d := _d({"status": 401, "sent": "fresh", "refreshed": true, "uses": 1})
	d.error.code == "PROVIDER_ERROR"
	contains(d.error.message, "authorizing again would loop")
	d.error.connector == _c
	_code({"status": 401, "sent": "fresh", "refreshed": true}) == "PROVIDER_ERROR"
}

test_reauthorizations_are_bounded if {
	_action({"status": 401, "sent": "none", "authorizations": challenge.max_reauthorizations - 1}) == "authorize"
	d := _d({"status": 401, "sent": "other", "authorizations": challenge.max_reauthorizations})
	d.error.code == "PROVIDER_ERROR"
	contains(d.error.message, "after 3 authorizations in this session")
}

test_a_403_asking_for_scopes_steps_up if {
	d := _d({"status": 403, "sent": "current", "www_authenticate": _scope_challenge, "step_ups": 1})
	d.result.action == "step_up"
	d.result.scopes == ["files:read", "files:write"]
	d.result.step_up == 2
	d.result.max_step_ups == 2
	_d({"status": 403, "sent": "none", "www_authenticate": _scope_challenge}).result.step_up == 1
}

test_a_403_asking_for_no_scope_fails if {
	every args in [
		{"status": 403, "sent": "current"},
		{"status": 403, "sent": "current", "www_authenticate": _b64(`Bearer error="invalid_token"`)},
	] {
		_code(args) == "PROVIDER_ERROR"
	}
}

test_another_status_fails if {
	d := _d({"status": 500, "sent": "current"})
	d.error.code == "PROVIDER_ERROR"
	contains(d.error.message, "answered 500")
}
