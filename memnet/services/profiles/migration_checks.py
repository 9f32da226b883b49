"""Loading and checking schema migrations (docs/profiles.md, "Schema migrations"),
beside :mod:`memnet.services.profiles.registry`: ``schemas/<schema_id>/migrations.json``
is read with the schemas, and each step is tried at startup on its examples and on the
initial content of every binding of the version it leaves, through every later step:
a migration whose result the next version refuses stops startup (ConfigError naming
the file and the field)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from memnet.domain import migrations
from memnet.domain.envelope import Json
from memnet.domain.errors import ConfigError
from memnet.domain.migrations import MigrationFailed, Step
from memnet.domain.profiles import Profile

StepsBySchema = dict[str, dict[str, Step]]  # schema_id -> from version -> step
Validate = Callable[[str, str, Json], str | None]  # schema id, version, content -> problem


def load_migrations(
    root: Path, versions: Mapping[str, set[str]], read: Callable[[Path], Any]
) -> StepsBySchema:
    """The steps of every ``<root>/<schema_id>/migrations.json`` (``versions``: the
    registered versions of each schema id), parsed and cross-checked."""
    found: StepsBySchema = {}
    for file in sorted(root.glob(f"*/{migrations.FILE_NAME}")) if root.is_dir() else []:
        raw = read(file)
        error = next(iter(Draft202012Validator(migrations.META_SCHEMA).iter_errors(raw)), None)
        if error is not None:
            where = "/" + "/".join(str(p) for p in error.absolute_path)
            raise ConfigError(str(file), where, error.message)
        steps = migrations.parse_steps(raw)
        problem = migrations.steps_problem(steps, versions.get(file.parent.name, set()))
        if problem is not None:
            raise ConfigError(str(file), *problem)
        found[file.parent.name] = {step.from_version: step for step in steps}
    return found


def check_migrations(
    root: Path, steps: StepsBySchema, profiles: Iterable[Profile], validate: Validate
) -> None:
    """Each step's examples, and the initial content of each binding at a version a step
    leaves, must be valid where they start and migrate to a valid document at each
    version of the chain that follows."""
    bound = [(p, b) for p in profiles for b in p.bindings]
    for schema_id, by_from in steps.items():
        file = root / schema_id / migrations.FILE_NAME
        for i, step in enumerate(by_from.values()):
            samples = [(f"/migrations/{i}/examples/{j}", e) for j, e in enumerate(step.examples)]
            samples += [
                (
                    f"/migrations/{i} (initial_content of {p.profile_id}/{b.binding_id})",
                    dict(b.initial_content),
                )
                for p, b in bound
                if (b.schema_id, b.schema_version) == (schema_id, step.from_version)
            ]
            for where, content in samples:
                problem = _sample_problem(schema_id, step.from_version, by_from, content, validate)
                if problem is not None:
                    raise ConfigError(str(file), where, problem)


def _sample_problem(
    schema_id: str, version: str, by_from: Mapping[str, Step], content: Json, validate: Validate
) -> str | None:
    problem = validate(schema_id, version, content)
    if problem is not None:
        return f"not a valid {schema_id} {version} content: {problem}"
    document: Json = {"schema_version": version, "content": content}
    while (step := by_from.get(version)) is not None:
        try:
            document = migrations.migrate(schema_id, document, [step]).document
        except MigrationFailed as failed:
            return failed.message
        version = step.to_version
        problem = validate(schema_id, version, document["content"])
        if problem is not None:
            return f"migrated to {version}, does not satisfy that version: {problem}"
    return None
