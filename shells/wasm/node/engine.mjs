// The core on Node: policy/policy.wasm loaded with OPA's official JavaScript loader
// (@open-policy-agent/opa-wasm), with the catalog as data, evaluated through the
// grantwire/decide and grantwire/manifest entrypoints.

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { loadPolicy } from "@open-policy-agent/opa-wasm";
import { canonical } from "./json.mjs";

export const REPO = fileURLToPath(new URL("../../../", import.meta.url));
export const POLICY_WASM = REPO + "policy/policy.wasm";
export const DECIDE = "grantwire/decide";
export const MANIFEST = "grantwire/manifest";

/** The corpus catalog (conformance/corpus/catalog.json) scenarios patch. */
export function defaultCatalog() {
  return JSON.parse(readFileSync(REPO + "conformance/corpus/catalog.json", "utf8"));
}

/** The policy's data document for a catalog: {"catalog": {"connectors": ...}}. */
export function policyData(catalog) {
  return { catalog: { connectors: catalog.connectors } };
}

let compiled;

/**
 * An engine: policy.wasm with the given data. decide(query) returns the decision object;
 * each call is also passed to onDecide(queryJSON, canonicalDecision) when set.
 */
export async function newEngine(data, { wasm = POLICY_WASM } = {}) {
  compiled ??= await WebAssembly.compile(readFileSync(wasm));
  const policy = await loadPolicy(compiled);
  policy.setData(data);
  for (const ep of [DECIDE, MANIFEST]) {
    if (!(ep in policy.entrypoints)) throw new Error(`engine: policy.wasm has no entrypoint ${ep}`);
  }
  const manifest = only(policy.evaluate({}, MANIFEST), MANIFEST);
  if (!manifest || !manifest.ops || Object.keys(manifest.ops).length === 0) {
    throw new Error("engine: the manifest names no operation");
  }
  const encoder = new TextEncoder();
  const engine = {
    name: "opa-wasm",
    manifest,
    onDecide: null,
    /** Answers a query (an object); the input is sent as the JSON text recorded. */
    decide(query) {
      const text = JSON.stringify(query);
      const decision = only(policy.evaluate(encoder.encode(text).buffer, DECIDE), DECIDE);
      check(decision);
      if (engine.onDecide) engine.onDecide(text, canonical(decision));
      return decision;
    },
  };
  return engine;
}

function only(resultSet, ep) {
  if (!Array.isArray(resultSet) || resultSet.length === 0) {
    throw new Error(`engine: ${ep} produced no decision`);
  }
  if (resultSet.length !== 1 || !("result" in resultSet[0])) {
    throw new Error(`engine: unexpected result set from ${ep}: ${JSON.stringify(resultSet).slice(0, 200)}`);
  }
  return resultSet[0].result;
}

// check mirrors core.ParseDecision: a need has needs; a done has exactly one of result/error.
function check(d) {
  if (d === null || typeof d !== "object") throw new Error("engine: malformed decision");
  if (d.status === "need") {
    if (!Array.isArray(d.needs) || d.needs.length === 0) throw new Error("engine: need decision without needs");
    for (const n of d.needs) {
      if (typeof n.key !== "string" || n.key === "" || typeof n.kind !== "string" || n.kind === "") {
        throw new Error(`engine: need without key or kind: ${JSON.stringify(n)}`);
      }
    }
  } else if (d.status === "done") {
    // As core.ParseDecision decodes it: "error": null is no error, "result": null a result.
    if ((d.error !== undefined && d.error !== null) === (d.result !== undefined)) {
      throw new Error("engine: done decision needs exactly one of result and error");
    }
  } else {
    throw new Error(`engine: unknown decision status ${JSON.stringify(d.status)}`);
  }
}
