// A local promptfoo provider whose answers are scripted per corpus variant, so promptfoo itself
// runs the assertions offline. EVALARC_VARIANT (baseline | current) picks the script; the
// provider's `persona` config tells two providers of one matrix apart.
"use strict";

const calls = new Map();

function answer(variant, persona, prompt, vars, call) {
  const topic = String(vars.topic || "");
  const current = variant === "current";
  if (vars.fail_provider === variant || vars.fail_provider === "both") {
    return { error: `simulated provider failure for ${topic} (HTTP 503)` };
  }
  if (vars.flaky) {
    // --repeat: the answer depends on the attempt number of this prompt.
    const pattern = current ? vars.flaky_current : vars.flaky_baseline;
    const ok = pattern[call % pattern.length] === "1";
    return { output: ok ? vars.expect : `no idea about ${topic}` };
  }
  const broken = current ? vars.broken_current : vars.broken_baseline;
  if (broken && (broken === "all" || broken === persona)) {
    return { output: `I am not sure about ${topic}.` };
  }
  const style = prompt.includes("[short]") ? "" : " Let me explain.";
  return { output: `${vars.expect}.${style}`, tokenUsage: { total: 10 + topic.length, prompt: 8, completion: 2 + topic.length } };
}

class ScriptedProvider {
  constructor(options) {
    this.config = (options && options.config) || {};
    this.label = options && options.label;
  }

  id() {
    return `scripted:${this.config.persona || "model"}`;
  }

  async callApi(prompt, context) {
    const vars = (context && context.vars) || {};
    const key = `${this.config.persona}|${prompt}`;
    const call = calls.get(key) || 0;
    calls.set(key, call + 1);
    const variant = process.env.EVALARC_VARIANT || "baseline";
    return answer(variant, this.config.persona || "model", prompt, vars, call);
  }
}

module.exports = ScriptedProvider;
