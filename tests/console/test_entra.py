"""Signing in to the console with Entra ID (issue 28; docs/console.md "Signing in with
Entra ID"), in a real browser against a local host that takes the tests' tenant's tokens
(``entra_host``). Azure is unreachable, so Microsoft's sign-in origin is played by
Playwright's network routing (:class:`Microsoft`): it answers what MSAL asks with the
shapes Entra answers (OpenID configuration, instance discovery, the authorize redirect,
the token endpoint) and issues access tokens signed by the tenant's key (tests/oidc.py),
which the host checks against the tenant's JWKS like any Entra token."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
import urllib.request
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
import pytest
from playwright.sync_api import Page, Request, Route, expect

from tests.conftest import ADMIN_KEY
from tests.console.conftest import CONSOLE_CALLER, CONSOLE_CLIENT_ID
from tests.console.steps import axe
from tests.oidc import LocalEntra, b64json, b64url
from tests.served import ServedHost

LOGIN = "https://login.microsoftonline.com"
USER_OID = "0d0d0d0d-1111-4222-8333-444444444444"  # the person who signs in


@dataclass
class Microsoft:
    """``https://login.microsoftonline.com`` as the browser sees it, for one tenant: every
    request is kept in ``seen`` (method and URL); ``expires_in`` is the lifetime of the
    access tokens it issues, ``roles`` their app roles; ``refuse`` makes the authorize step
    answer an OAuth error, ``refresh_expired`` the token endpoint refuse refresh tokens."""

    tenant: LocalEntra
    scope: str
    expires_in: int = 3600
    refuse: str | None = None
    refresh_expired: bool = False
    roles: list[str] = field(default_factory=lambda: ["Memory.Read", "Memory.Write"])
    seen: list[tuple[str, str]] = field(default_factory=list)
    issued: list[str] = field(default_factory=list)  # access tokens, in order
    codes: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"{LOGIN}/{self.tenant.tenant_id}"

    def handle(self, route: Route) -> None:
        request = route.request
        self.seen.append((request.method, request.url))
        path = urlsplit(request.url).path
        if request.method == "OPTIONS":
            route.fulfill(status=204, headers=self._cors(request))
        elif path.endswith("/v2.0/.well-known/openid-configuration"):
            self._json(route, self._openid_configuration())
        elif path == "/common/discovery/instance":
            self._json(route, self._instance_discovery())
        elif path.endswith("/oauth2/v2.0/authorize"):
            self._authorize(route)
        elif path.endswith("/oauth2/v2.0/token"):
            self._token(route)
        else:
            self._json(route, {"error": "not_found"}, 404)

    # -- the endpoints ------------------------------------------------------------------

    def _authorize(self, route: Route) -> None:
        """The person signs in (no page: at once) and is sent back with a code."""
        query = {k: v[0] for k, v in parse_qs(urlsplit(route.request.url).query).items()}
        assert query["client_id"] == CONSOLE_CLIENT_ID and query["response_type"] == "code"
        assert query["code_challenge_method"] == "S256" and self.scope in query["scope"]
        answer = {"state": query["state"]}
        if self.refuse:
            answer |= {"error": self.refuse, "error_description": "AADSTS65004: declined."}
        else:
            code = secrets.token_urlsafe(24)
            self.codes[code] = query
            answer |= {"code": code, "client_info": self._client_info(), "session_state": "s1"}
        mode = query.get("response_mode", "fragment")
        separator = "#" if mode == "fragment" else "?"
        location = query["redirect_uri"] + separator + urlencode(answer)
        route.fulfill(status=302, headers={"Location": location})

    def _token(self, route: Route) -> None:
        """A code (checked against its PKCE challenge) or a refresh token for tokens."""
        form = {k: v[0] for k, v in parse_qs(route.request.post_data or "").items()}
        assert form["client_id"] == CONSOLE_CLIENT_ID
        nonce = ""
        if form["grant_type"] == "authorization_code":
            asked = self.codes.pop(form["code"])
            verifier = hashlib.sha256(form["code_verifier"].encode()).digest()
            assert b64url(verifier) == asked["code_challenge"], "PKCE"
            assert form["redirect_uri"] == asked["redirect_uri"]
            nonce = asked.get("nonce", "")
        else:
            assert form["grant_type"] == "refresh_token" and form["refresh_token"]
            if self.refresh_expired:
                refused = {
                    "error": "invalid_grant",
                    "error_description": "AADSTS700084: The refresh token was issued to a "
                    "single page app (SPA), and therefore has a fixed, limited lifetime.",
                    "error_codes": [700084],
                }
                self._json(route, refused, 400, self._cors(route.request))
                return
        access = self._access_token()
        self.issued.append(access)
        body = {
            "token_type": "Bearer",
            "scope": self.scope,
            "expires_in": self.expires_in,
            "ext_expires_in": self.expires_in,
            "access_token": access,
            "refresh_token": "0.AAAA" + secrets.token_urlsafe(48),
            "id_token": self._id_token(nonce),
            "client_info": self._client_info(),
        }
        self._json(route, body, headers=self._cors(route.request))

    # -- what it issues -----------------------------------------------------------------

    def _access_token(self) -> str:
        """A delegated v2 access token for the API, as Entra issues to the console."""
        now = int(time.time())
        return self.tenant.mint(
            {
                "azp": CONSOLE_CLIENT_ID,
                "oid": USER_OID,
                "sub": "pairwise-" + b64url(USER_OID.encode())[:20],
                "scp": self.scope.rsplit("/", 1)[-1],
                "roles": self.roles or None,
                "name": "Ada Lovelace",
                "preferred_username": "ada@contoso.example",
                "iat": now,
                "nbf": now,
                "exp": now + self.expires_in,
            }
        )

    def _id_token(self, nonce: str) -> str:
        now = int(time.time())
        claims = {
            "aud": CONSOLE_CLIENT_ID,
            "iss": self.tenant.issuer,
            "iat": now,
            "nbf": now,
            "exp": now + 3600,
            "name": "Ada Lovelace",
            "nonce": nonce,
            "oid": USER_OID,
            "preferred_username": "ada@contoso.example",
            "sub": "pairwise-id",
            "tid": self.tenant.tenant_id,
            "ver": "2.0",
        }
        headers = {"kid": self.tenant.current.kid, "typ": "JWT"}
        return jwt.encode(claims, self.tenant.current.private_key, "RS256", headers)

    def _client_info(self) -> str:
        return b64json({"uid": USER_OID, "utid": self.tenant.tenant_id})

    # -- recorded shapes ----------------------------------------------------------------

    def _openid_configuration(self) -> dict[str, Any]:
        base = self.base
        return {
            "token_endpoint": f"{base}/oauth2/v2.0/token",
            "token_endpoint_auth_methods_supported": [
                "client_secret_post",
                "private_key_jwt",
                "client_secret_basic",
            ],
            "jwks_uri": f"{base}/discovery/v2.0/keys",
            "response_modes_supported": ["query", "fragment", "form_post"],
            "subject_types_supported": ["pairwise"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "response_types_supported": ["code", "id_token", "code id_token", "id_token token"],
            "scopes_supported": ["openid", "profile", "email", "offline_access"],
            "issuer": self.tenant.issuer,
            "request_uri_parameter_supported": False,
            "userinfo_endpoint": "https://graph.microsoft.com/oidc/userinfo",
            "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
            "device_authorization_endpoint": f"{base}/oauth2/v2.0/devicecode",
            "http_logout_supported": True,
            "frontchannel_logout_supported": True,
            "end_session_endpoint": f"{base}/oauth2/v2.0/logout",
            "kerberos_endpoint": f"{base}/kerberos",
            "tenant_region_scope": "EU",
            "cloud_instance_name": "microsoftonline.com",
            "cloud_graph_host_name": "graph.windows.net",
            "msgraph_host": "graph.microsoft.com",
            "rbac_url": "https://pas.windows.net",
        }

    def _instance_discovery(self) -> dict[str, Any]:
        return {
            "tenant_discovery_endpoint": f"{self.base}/v2.0/.well-known/openid-configuration",
            "api-version": "1.1",
            "metadata": [
                {
                    "preferred_network": "login.microsoftonline.com",
                    "preferred_cache": "login.windows.net",
                    "aliases": [
                        "login.microsoftonline.com",
                        "login.windows.net",
                        "login.microsoft.com",
                        "sts.windows.net",
                    ],
                }
            ],
        }

    @staticmethod
    def _cors(request: Request) -> dict[str, str]:
        return {
            "Access-Control-Allow-Origin": request.headers.get("origin", "*"),
            "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
            "Access-Control-Allow-Headers": request.headers.get(
                "access-control-request-headers", "content-type"
            ),
        }

    @staticmethod
    def _json(
        route: Route, body: Any, status: int = 200, headers: dict[str, str] | None = None
    ) -> None:
        route.fulfill(
            status=status,
            content_type="application/json; charset=utf-8",
            headers={"Cache-Control": "no-store", **(headers or {})},
            body=json.dumps(body),
        )


class Meta(HTMLParser):
    """The content of ``<meta name="memnet-entra">``."""

    content: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "meta" and found.get("name") == "memnet-entra":
            self.content = found.get("content") or ""


def served_page(base_url: str) -> tuple[str, str | None]:
    """The page's Content-Security-Policy and its sign-in meta content."""
    with urllib.request.urlopen(f"{base_url}/console/") as answer:
        policy, body = answer.headers["Content-Security-Policy"], answer.read().decode()
    meta = Meta()
    meta.feed(body)
    return policy, meta.content


def directive(policy: str, name: str) -> list[str]:
    found = [d.split()[1:] for d in policy.split(";") if d.split()[:1] == [name]]
    return found[0] if found else []


def entra_url(host: ServedHost) -> str:
    return f"http://127.0.0.1:{host.port}"


@pytest.fixture
def idp(entra_page: Page, entra_host: ServedHost, entra_tenant: LocalEntra) -> Microsoft:
    """Microsoft for ``entra_page``, issuing tokens for the scope the page asks."""
    _, meta = served_page(entra_url(entra_host))
    assert meta
    fake = Microsoft(entra_tenant, json.loads(meta)["scope"])
    entra_page.context.route(f"{LOGIN}/**", fake.handle)
    return fake


def bearers(page: Page) -> list[str]:
    """The Authorization header of every request the page makes to its host, as made."""
    sent: list[str] = []

    def keep(request: Request) -> None:
        target = urlsplit(request.url)
        if target.hostname == "127.0.0.1" and target.path.startswith("/v1/"):
            sent.append(request.headers.get("authorization", ""))

    page.on("request", keep)
    return sent


def sign_in_with_microsoft(page: Page) -> None:
    page.goto("/console/")
    page.get_by_role("button", name="Sign in with Microsoft").click()
    page.get_by_text("Signed in as").wait_for()


# -- served: the meta and the policy ----------------------------------------------------


def test_the_page_offers_entra_only_when_configured(base_url: str, entra_host: ServedHost) -> None:
    policy, meta = served_page(base_url)
    assert meta == "" and LOGIN not in policy
    assert directive(policy, "connect-src") == ["'self'"]
    assert directive(policy, "frame-src") == ["'none'"]

    policy, meta = served_page(entra_url(entra_host))
    assert meta
    config = json.loads(meta)
    assert config["clientId"] == CONSOLE_CLIENT_ID
    assert re.fullmatch(rf"{LOGIN}/[0-9a-f-]{{36}}", config["authority"])
    assert config["scope"].startswith("api://") and config["scope"].endswith("/Memory.Access")
    assert directive(policy, "connect-src") == ["'self'", LOGIN]
    assert directive(policy, "frame-src") == ["'none'"]  # no silent iframe
    assert "require-trusted-types-for 'script'" in policy and "unsafe" not in policy


def test_without_entra_there_is_no_microsoft_button_and_no_msal(page: Page) -> None:
    loaded: list[str] = []
    page.on("request", lambda request: loaded.append(request.url))
    page.goto("/console/")
    expect(page.get_by_label("API key")).to_be_visible()
    expect(page.get_by_role("button", name="Sign in with Microsoft")).to_have_count(0)
    assert not [url for url in loaded if "msal" in url]


# -- signing in -------------------------------------------------------------------------


def test_signing_in_with_microsoft_reaches_the_api_with_the_token(
    entra_page: Page, idp: Microsoft
) -> None:
    page = entra_page
    sent = bearers(page)
    page.goto("/console/")
    expect(page.get_by_label("API key")).to_be_visible()
    axe(page)
    page.get_by_role("button", name="Sign in with Microsoft").click()
    expect(page.get_by_text("Signed in as")).to_contain_text(CONSOLE_CALLER)
    assert page.url.endswith("/console/#/") or page.url.endswith("/console/")
    (token,) = idp.issued
    for part in [token, *token.split("."), "code=", "state=", "client_info"]:
        assert part not in page.url
    assert sent and all(header == f"Bearer {token}" for header in sent)
    stored = page.evaluate("() => JSON.stringify(Object.entries(sessionStorage))")
    assert token in stored
    assert token not in page.evaluate("() => JSON.stringify(Object.entries(localStorage))")
    # The person is bound to their own memory: the chooser opens it.
    expect(page.get_by_label("User", exact=True)).to_have_value(USER_OID)
    axe(page)


def test_signing_in_comes_back_to_the_page_asked_for(entra_page: Page, idp: Microsoft) -> None:
    page = entra_page
    route = f"#/acme/{USER_OID}/memory"
    page.goto(f"/console/{route}")
    page.get_by_role("button", name="Sign in with Microsoft").click()
    page.locator("main[data-ready='memory']").wait_for()
    assert page.url.endswith(f"/console/{route}")
    assert "acme" not in " ".join(url for _, url in idp.seen)  # the route stays here
    assert page.evaluate("() => sessionStorage.getItem('memnet.console.return')") is None


def test_signing_out_clears_the_tab(entra_page: Page, idp: Microsoft) -> None:
    page = entra_page
    sign_in_with_microsoft(page)
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("button", name="Sign in with Microsoft")).to_be_visible()
    assert page.evaluate("() => JSON.stringify(Object.entries(sessionStorage))") == "[]"
    page.reload()
    expect(page.get_by_role("button", name="Sign in with Microsoft")).to_be_visible()
    expect(page.get_by_text("Signed in as")).to_have_count(0)


def test_a_signed_in_tab_stays_signed_in_when_reloaded(entra_page: Page, idp: Microsoft) -> None:
    page = entra_page
    sign_in_with_microsoft(page)
    page.reload()
    expect(page.get_by_text("Signed in as")).to_contain_text(CONSOLE_CALLER)
    assert len(idp.issued) == 1  # from MSAL's cache: no second sign-in


def test_an_expiring_token_is_renewed_before_a_call(entra_page: Page, idp: Microsoft) -> None:
    idp.expires_in = 120  # inside MSAL's renewal margin (5 minutes): renewed at once
    page = entra_page
    sent = bearers(page)
    sign_in_with_microsoft(page)
    page.reload()
    expect(page.get_by_text("Signed in as")).to_contain_text(CONSOLE_CALLER)
    assert len(idp.issued) >= 2
    tokens = [u for m, u in idp.seen if m == "POST" and urlsplit(u).path.endswith("/token")]
    assert len(tokens) == len(idp.issued)
    assert sent[-1] == f"Bearer {idp.issued[-1]}"


def test_when_the_refresh_token_has_expired_the_tab_is_signed_out(
    entra_page: Page, idp: Microsoft
) -> None:
    idp.expires_in = 120  # to be renewed on the next load
    page = entra_page
    sign_in_with_microsoft(page)
    idp.refresh_expired = True
    page.reload()
    expect(page.get_by_role("button", name="Sign in with Microsoft")).to_be_visible()
    expect(page.get_by_text("Signed in as")).to_have_count(0)
    assert page.evaluate("() => JSON.stringify(Object.entries(sessionStorage))") == "[]"
    assert not [url for _, url in idp.seen if "prompt=none" in url]  # no hidden iframe


def test_a_refused_sign_in_is_said_so_and_leaves_no_token(entra_page: Page, idp: Microsoft) -> None:
    idp.refuse = "access_denied"
    page = entra_page
    page.goto("/console/")
    page.get_by_role("button", name="Sign in with Microsoft").click()
    expect(page.get_by_role("alert")).to_contain_text("access_denied")
    expect(page.get_by_role("button", name="Sign in with Microsoft")).to_be_visible()
    assert "error" not in page.url and not idp.issued
    assert page.evaluate("() => JSON.stringify(Object.entries(sessionStorage))") == "[]"


def test_an_account_mem_net_grants_nothing_is_told_so_and_signed_out(
    entra_page: Page, idp: Microsoft
) -> None:
    idp.roles = []  # signed in at Microsoft, but no app role of the API
    page = entra_page
    page.goto("/console/")
    page.get_by_role("button", name="Sign in with Microsoft").click()
    expect(page.get_by_role("note")).to_contain_text("ROLE_FORBIDDEN")
    expect(page.get_by_role("button", name="Sign in with Microsoft")).to_be_visible()
    assert page.evaluate("() => JSON.stringify(Object.entries(sessionStorage))") == "[]"


def test_the_api_key_still_signs_in_where_entra_is_offered(entra_page: Page) -> None:
    page = entra_page
    page.goto("/console/")
    page.get_by_label("API key").fill(ADMIN_KEY)
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_text("Signed in as")).to_contain_text("dev-admin")
