"""What ``function_app.py`` declares for the Azure Functions MCP extension is what
``memnet.api.tools`` defines and what the local host serves; and the tools read the
context the way the extension writes it."""

from __future__ import annotations

import json

import function_app
from funchost.index import functions_of
from funchost.mcp import McpEndpoint
from memnet import bootstrap
from memnet.api import tools
from memnet.api.tools.invocation import parse_context


def declared() -> dict[str, dict[str, object]]:
    return {t.binding["toolName"]: t.binding for t in functions_of(function_app.app).mcp_tools}


def test_every_tool_is_declared_from_its_spec():
    bindings = declared()
    assert set(bindings) == set(tools.SPECS) == set(tools.HANDLERS)
    for name, spec in tools.SPECS.items():
        binding = bindings[name]
        assert binding["type"] == "mcpToolTrigger" and binding["name"] == "context"
        assert binding["description"] == spec.description
        assert json.loads(str(binding["toolProperties"])) == [p.binding() for p in spec.properties]


def test_the_extensions_property_shape_is_used():
    for spec in tools.SPECS.values():
        for item in json.loads(spec.properties_json()):
            assert set(item) == {
                "propertyName",
                "propertyType",
                "description",
                "isRequired",
                "isArray",
            }
            assert item["propertyType"] in {"string", "number", "integer", "boolean", "object"}


def test_the_host_serves_the_declared_tools():
    served = McpEndpoint(function_app.app).tools
    assert set(served) == set(tools.SPECS)
    for name, spec in tools.SPECS.items():
        schema = served[name].tool.input_schema
        assert list(schema["properties"]) == [p.name for p in spec.properties]
        assert schema["required"] == [p.name for p in spec.properties if p.required]


def test_the_caller_headers_come_from_the_transport_properties():
    context = {
        "name": "recall",
        "arguments": {"tenant_id": "t1"},
        "sessionid": "s",
        "clientinfo": {"name": "c", "version": "1"},
        "transport": {
            "name": "http",
            "properties": {"headers": {"Authorization": "Bearer k", "If-Match": '"x"'}},
        },
    }
    parsed = parse_context(json.dumps(context), bootstrap.services)
    assert parsed.arguments == {"tenant_id": "t1"}
    assert parsed.headers == {"authorization": "Bearer k"}  # If-Match is the tool's own


def test_a_malformed_context_is_a_tool_error():
    result = json.loads(tools.call("recall", "not json", bootstrap.services))
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == "MALFORMED_JSON"
