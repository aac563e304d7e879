"""The JSON Schemas of the files a user writes (an operator profile, an options file) and their check: a document
that does not fit is one line naming where (`install.local.readyTimeoutSeconds: True is not of type 'number'`).
The loaders check their files by hand first, for messages that say how to fix them; the schema is the contract a
vendor can validate a file against with any JSON Schema tool, and what the loader checks last."""
from __future__ import annotations

import json
from functools import cache
from pathlib import Path


@cache
def load(path: Path) -> dict:
    return json.loads(path.read_text())


def problem(doc, schema: dict) -> str | None:
    """The first way `doc` does not fit `schema` (the most relevant, by jsonschema's best match), in one line."""
    import jsonschema

    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(doc))
    if error is None:
        return None
    where = ".".join(str(p) for p in error.absolute_path) or "the top level"
    return f"{where}: {' '.join(error.message.split())[:300]}"
