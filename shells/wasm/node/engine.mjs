// The core on Node: policy/policy.wasm under OPA's official JavaScript loader
// (@open-policy-agent/opa-wasm), with the catalog as data, answering grantwire/decide and
// grantwire/manifest; and the contract hostabi/schema, against which every query sent,
// decision received and fact fetched is validated (ajv, JSON Schema 2020-12).

import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { loadPolicy } from "@open-policy-agent/opa-wasm";
import Ajv2020 from "ajv/dist/2020.js";

export const REPO = fileURLToPath(new URL("../../../", import.meta.url));
const SCHEMAS = REPO + "hostabi/schema/";
const BASE = "https://github.com/grantwire/grantwire/hostabi/schema/";

const ajv = new Ajv2020({ allowUnionTypes: true, strictTypes: true, strictTuples: true });
for (const f of readdirSync(SCHEMAS)) ajv.addSchema(JSON.parse(readFileSync(SCHEMAS + f, "utf8")));

// validate checks a value against hostabi/schema ("query.schema.json",
// "facts.schema.json#/$defs/<kind>", ...): a mismatch is a bug of the core or of the host.
export function validate(id, value) {
  const check = ajv.getSchema(BASE + id);
  if (check(value)) return;
  throw new Error(`hostabi/schema: ${id}: ${ajv.errorsText(check.errors)} in ${JSON.stringify(value).slice(0, 400)}`);
}

let compiled;

// newEngine returns an engine deciding with the given policy data ({"catalog": ...}):
// decide(query) returns the decision; onDecide(queryText, decision), when set, sees each.
export async function newEngine(data, wasm = REPO + "policy/policy.wasm") {
  compiled ??= await WebAssembly.compile(readFileSync(wasm));
  const policy = await loadPolicy(compiled);
  policy.setData(data);
  const only = (input, entrypoint) => policy.evaluate(input, entrypoint)[0]?.result; // the schemas judge what comes back
  const engine = {
    manifest: only({}, "grantwire/manifest"),
    onDecide: null,
    decide(query) {
      validate("query.schema.json", query);
      const text = JSON.stringify(query);
      const decision = only(new TextEncoder().encode(text).buffer, "grantwire/decide");
      validate("decision.schema.json", decision);
      engine.onDecide?.(text, decision);
      return decision;
    },
  };
  return engine;
}
