"""grantwire's errors in GAIA's shape (gaia.connectors.errors): every error an operation
raises is a ConnectorsError carrying the policy's stable code, message (ending with the
fixing command), fix, fields, REST status and CLI exit code; the codes GAIA has classes
for raise those classes. The policy decides every error; this module only names them."""

import enum


class ConnectorsError(Exception):
    """Every error of an operation. code is one of docs/behaviour.md#errors; str() is the message."""

    def __init__(self, error, table=None):
        self.error = dict(error)
        self.code, self.fix = error.get("code", "INTERNAL"), error.get("fix", "")
        self.message = error.get("message", self.code)
        self.summary = error.get("summary", self.message)
        info = (table or {}).get(self.code, {})
        self.status, self.exit = info.get("status", 500), info.get("exit", 5)
        self.provider = error.get("connector") or error.get("provider")
        self.agent_id = error.get("agent")
        self.missing_scopes = list(error.get("missing_scopes") or [])
        self.full_scopes = list(error.get("full_scopes") or self.missing_scopes)
        super().__init__(self.message)


GrantwireError = ConnectorsError


class ConfigurationError(ConnectorsError):
    """CONFIGURATION: misuse (activation on a provider, no client configured, no scopes, ...)."""


class AuthRequiredError(ConnectorsError):
    """The gate refused: reason says why (GAIA's five reasons)."""

    class Reason(str, enum.Enum):
        NOT_CONNECTED = "not_connected"
        AGENT_NOT_GRANTED = "agent_not_granted"
        CONNECTION_MISSING_SCOPES = "connection_missing_scopes"
        REAUTH_REQUIRED = "reauth_required"
        TENANT_MISMATCH = "tenant_mismatch"

    def __init__(self, error, table=None):
        super().__init__(error, table)
        self.reason = AuthRequiredError.Reason(self.code.lower())


Reason = AuthRequiredError.Reason


class ConnectionRevokedError(ConnectorsError):
    """CONNECTION_REVOKED: the token endpoint answered invalid_grant (the connection is cleared)."""


class ScopeMismatchError(ConnectorsError):
    """SCOPE_MISMATCH: forwarded scopes do not cover what the listed agents declare."""


class ConsentDeniedError(ConnectorsError):
    """CONSENT_DENIED: the user refused the authorization."""


class FlowTimeoutError(ConnectorsError):
    """AUTHORIZATION_TIMEOUT: nobody completed the authorization in time."""


class FlowInProgressError(ConnectorsError):
    """FLOW_IN_PROGRESS: an authorization of the connector is already waiting."""


class OAuthProviderError(ConnectorsError):
    """PROVIDER_ERROR: the provider failed (unreachable, not JSON, an OAuth error)."""


class UnknownAgentError(ConnectorsError):
    """UNKNOWN_AGENT: an agent to grant is not in the registry; nothing was written."""

    def __init__(self, error, table=None):
        super().__init__(error, table)
        self.agent_ids = list(error.get("agent_ids") or [])


_CLASSES = {
    "CONFIGURATION": ConfigurationError, "CONNECTION_REVOKED": ConnectionRevokedError, "SCOPE_MISMATCH": ScopeMismatchError,
    "CONSENT_DENIED": ConsentDeniedError, "AUTHORIZATION_TIMEOUT": FlowTimeoutError, "FLOW_IN_PROGRESS": FlowInProgressError,
    "PROVIDER_ERROR": OAuthProviderError, "UNKNOWN_AGENT": UnknownAgentError,
    **{r.name: AuthRequiredError for r in AuthRequiredError.Reason},
}


def error_for(error, table=None):
    """The exception of an operation's error object (with the manifest's error table)."""
    return _CLASSES.get(error.get("code"), ConnectorsError)(error, table)
