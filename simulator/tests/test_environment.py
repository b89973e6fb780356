"""environment.yml (conda users) must ask for exactly what pyproject.toml asks for, extras included."""

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*)$")


def requirement_key(text):
    """Split "Name>=1,<2" into a PEP 503 normalised name and its sorted specifier parts."""
    match = REQUIREMENT.match(text)
    assert match, f"cannot read requirement {text!r}"
    name, spec = match.groups()
    # reverse order reads naturally for ranges: (">=1.26", "<3")
    parts = tuple(sorted((p.replace(" ", "") for p in spec.split(",") if p.strip()), reverse=True))
    return re.sub(r"[-_.]+", "-", name).lower(), parts


def pyproject_requirements():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    texts = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        texts.extend(extra)
    return dict(requirement_key(t) for t in texts)


def environment_requirements():
    """The items of the `- pip:` list: the only YAML this file needs, so no YAML library."""
    lines = (ROOT / "environment.yml").read_text().splitlines()
    pip_indent = None
    texts = []
    for line in lines:
        content = line.split(" #", 1)[0].rstrip()
        if not content.strip() or content.lstrip().startswith("#"):
            continue
        indent = len(content) - len(content.lstrip())
        if pip_indent is None:
            if content.strip() == "- pip:":
                pip_indent = indent
            continue
        if indent <= pip_indent:
            break
        assert content.strip().startswith("- "), f"environment.yml: unexpected line in pip list: {line!r}"
        texts.append(content.strip()[2:].strip())
    assert pip_indent is not None, "environment.yml has no '- pip:' section"
    return dict(requirement_key(t) for t in texts)


def describe_difference(from_pyproject, from_environment):
    lines = []
    for name in sorted(from_pyproject.keys() - from_environment.keys()):
        lines.append(f"only in pyproject.toml: {name}{','.join(from_pyproject[name])}")
    for name in sorted(from_environment.keys() - from_pyproject.keys()):
        lines.append(f"only in environment.yml: {name}{','.join(from_environment[name])}")
    for name in sorted(from_pyproject.keys() & from_environment.keys()):
        if from_pyproject[name] != from_environment[name]:
            lines.append(
                f"{name}: pyproject.toml says {','.join(from_pyproject[name]) or 'any version'}, "
                f"environment.yml says {','.join(from_environment[name]) or 'any version'}"
            )
    return "\n".join(lines)


def test_environment_yml_matches_pyproject():
    from_pyproject = pyproject_requirements()
    from_environment = environment_requirements()
    if from_pyproject != from_environment:
        pytest.fail("dependencies differ:\n" + describe_difference(from_pyproject, from_environment), pytrace=False)
