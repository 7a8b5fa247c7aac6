"""The catalog: the spec of its YAML files (spec), the catalog built from them (model), the
hardened YAML reader and the browser's JSON (loader), the parse cache (cache) and the JSON Schema
written from the spec (schema)."""
