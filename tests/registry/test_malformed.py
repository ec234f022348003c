"""Every malformed workbench file gets one clear message naming file, line and field, exit 2, and no store write."""

from __future__ import annotations

from pathlib import Path

import pytest

H = "hypotheses.yaml"
E = "experiments/agent-repro.yaml"

# (case id, file, text to replace, replacement, words the message must hold, text of the line it must name)
CASES = [
    ("yaml-syntax", H, "    claim: The HiCache+bf16 corruption is a side effect of the NIXL abort wedge.",
     "    claim: [unclosed", "invalid YAML", None),
    # An unclosed '{' on one line was reported at the next line, where the parser noticed it: the error now
    # points where the mapping began and says where it was noticed.
    ("yaml-unclosed-brace", H, "      treatment: {hicache: on}", "      treatment: {hicache: on",
     "noticed at line", "      treatment: {hicache: on"),
    # A quote left open runs on to the next quote in the file, lines later, and the YAML breaks there: the error
    # names the line where the quote was opened.
    ("yaml-unclosed-double-quote", H,
     "    claim: The HiCache+bf16 corruption is a side effect of the NIXL abort wedge.",
     "    claim: \"The abort fix removes it", "the \" at line", "    claim: \"The abort fix removes it"),
    ("yaml-unclosed-quote-experiment", E, '      path: "{{ sim_dir }}/serve.sh"', '      path: "{{ sim_dir }}/serve.sh',
     "is never closed", '      path: "{{ sim_dir }}/serve.sh'),
    ("yaml-unclosed-single-quote-flow", E, "      wall_s: {regex: 'host=(?P<value>[0-9.]+)s'}",
     "      wall_s: {regex: 'host=(?P<value>[0-9.]+)s}", "the ' at line", "      wall_s: {regex: 'host="),
    ("yaml-unclosed-quote-at-end", H, '      - {metric: aborts, equals: 0, why: "the wedge must not be in play"}',
     '      - {metric: aborts, equals: 0, why: "the wedge must not be in play}', "is never closed (noticed at line",
     '      - {metric: aborts, equals: 0, why: "the wedge'),
    # A quote left open that a later quote closes without breaking the YAML loaded silently, the lines between
    # taken in as its text: a quoted text of several lines that takes in what look like the file's keys (or a
    # `- {` item) is refused at the quote that opened it.
    ("yaml-quote-takes-in-keys", H,
     "    claim: The HiCache+bf16 corruption is a side effect of the NIXL abort wedge.\n",
     '    claim: "The HiCache+bf16 corruption is a side effect of the NIXL abort wedge.\n'
     '    falsified_if: Corruption persists in the treatment arm with zero aborts."\n',
     "the \" at line 31 (column 12) is closed only at line 32", '    claim: "The HiCache+bf16'),
    # A key of the schema that the file uses nowhere else (no hypothesis sets `status:`) is a key all the same.
    ("yaml-quote-takes-in-a-key-only-the-schema-knows", H,
     "    claim: The HiCache+bf16 corruption is a side effect of the NIXL abort wedge.\n",
     '    claim: "The HiCache+bf16 corruption is a side effect of the NIXL abort wedge.\n'
     '    status: retired"\n',
     "the \" at line 31 (column 12) is closed only at line 32", '    claim: "The HiCache+bf16'),
    ("yaml-quote-takes-in-flow-item", H,
     "    assumptions:\n      - The wedge can corrupt surviving requests' KV cache.\n"
     "      - The earlier measurements used the same repro parameters.\n"
     "      - The abort fix removes every abort, so the treatment arm has no wedge.\n"
     "      - fp8 ran clean only because it did not wedge.\n",
     "    assumptions: ['The wedge can corrupt surviving KV cache.\n      - {text: the fix removes every abort}']\n",
     "looks like a key", "    assumptions: ['The wedge"),
    ("yaml-quote-takes-in-keys-experiment", E,
     "description: >-\n"
     "  C=80 concurrent agent sessions of 4 rounds each; a session whose tool call comes back as token salad\n"
     "  is a leak. Aborts are the decode log's WaitingForInput lines during the run.\n",
     'description: "C=80 concurrent agent sessions of 4 rounds each.\n'
     'version: 2\n  Aborts are WaitingForInput lines."\n',
     "the \" at line 6 (column 14)", 'description: "C=80'),
    # A plain value holding ": " is read as a new key, and one holding " #" loses the rest to a comment: the hint
    # gives the line with its value quoted (it said only "fix the YAML syntax").
    ("yaml-colon-in-plain-value", H,
     "    claim: The HiCache+bf16 corruption is a side effect of the NIXL abort wedge.",
     "    claim: the wedge: a race in the transfer layer (issue #12)",
     'Hint: quote the value: claim: "the wedge: a race in the transfer layer (issue #12)"',
     "    claim: the wedge: a race"),
    ("yaml-comment-in-flow-value", E,
     "  hicache: {values: [on, off], default: on, description: hierarchical (host) prefix cache}",
     "  hicache: {values: [on, off], default: on, description: cache #2 of the host}",
     'quote the value: description: "cache #2 of the host"', "  hicache: {values: [on, off], default: on"),
    ("yaml-comment-in-value-that-runs-on", H,
     "    claim: The HiCache+bf16 corruption is a side effect of the NIXL abort wedge.",
     "    claim: The corruption (bug #7) is a side effect\n      of the NIXL abort wedge.",
     'quote the value: claim: "The corruption (bug #7) is a side effect', None),
    # A " #" after a plain value of several words that breaks no YAML cut the value there and loaded the rest as
    # a comment, with no word: the line is refused, and the hint gives the whole text quoted.
    ("yaml-comment-cuts-plain-value", H,
     "    claim: The HiCache+bf16 corruption is a side effect of the NIXL abort wedge.",
     "    claim: the rate drops #2 of the fixes",
     'the text after " #" (#2 of the fixes) would be dropped as a comment: the value would read "the rate drops"',
     "    claim: the rate drops #2"),
    ("yaml-comment-cuts-plain-command", E, '      check: "bash -n {{ file }}"', "      check: bash -n {{ file }} #1",
     'Hint: quote the value: check: "bash -n {{ file }} #1"', "      check: bash -n"),
    ("duplicate-key", H, "    isolates: nixl_abort_fix\n", "    isolates: nixl_abort_fix\n    isolates: hicache\n",
     "duplicate key 'isolates'", "    isolates: hicache"),
    ("unknown-field", H, "    falsified_if: Corruption persists in the treatment arm with zero aborts.",
     "    falsifed_if: typo", "unknown field 'falsifed_if'", "    falsifed_if: typo"),
    ("missing-claim", H, "    claim: The HiCache+bf16 corruption is a side effect of the NIXL abort wedge.\n", "",
     "missing required field 'claim'", "  - id: wedge-confound"),
    ("unknown-parent", H, "    parent: hicache-bf16-race\n    claim: The HiCache+bf16",
     "    parent: no-such-root\n    claim: The HiCache+bf16", "parent 'no-such-root'", "    parent: no-such-root"),
    ("cycle", H, "  - id: hicache-bf16-race\n",
     "  - id: hicache-bf16-race\n    parent: token-granular-geometry-deployment\n",
     # The loop is spelt out: it said "through 'hicache-bf16-race' (parents loop back via 'hicache-bf16-race')".
     "lineage cycle: hicache-bf16-race -> token-granular-geometry-deployment -> token-granular-geometry -> "
     "hicache-bf16-race (each the parent of the one before)", "    parent: token-granular-geometry-deployment"),
    # Two metrics each declared the other's alias: the chain never reaches a metric that carries values.
    ("same-as-cycle", E, "  waiting_for_input: {kind: count, guard: true,",
     "  waiting_for_input: {kind: count, same_as: aborts, guard: true,",
     "same_as loop: waiting_for_input -> aborts -> waiting_for_input (each another name for the next)",
     "  waiting_for_input: {kind: count, same_as: aborts, guard: true,"),
    ("duplicate-id", H, "  - id: token-granular-geometry-deployment", "  - id: wedge-confound",
     "duplicate hypothesis id 'wedge-confound'", "  - id: wedge-confound"),
    ("unknown-experiment", H, "    experiment: kernel-geometry", "    experiment: kernel-geometri",
     "experiment 'kernel-geometri' not found", "    experiment: kernel-geometri"),
    ("arms-differ-in-two", H, "      treatment: {nixl_abort_fix: on}", "      treatment: {nixl_abort_fix: on, seed: 3}",
     "besides the isolated variable", "      treatment: {nixl_abort_fix: on, seed: 3}"),
    ("arms-do-not-differ", H, "      treatment: {nixl_abort_fix: on}", "      treatment: {nixl_abort_fix: off}",
     "the arms do not differ", "      treatment: {nixl_abort_fix: off}"),
    ("unknown-variable", H,
     "    hold: {index_k_dtype: bf16, hicache: on}\n    predicts:\n"
     "      - {metric: corruption_rate, arm: treatment, at_most: 0.02,",
     "    hold: {index_k_dtype: bf16, hicache: on, kv_layout: paged}\n    predicts:\n"
     "      - {metric: corruption_rate, arm: treatment, at_most: 0.02,",
     "unknown variable 'kv_layout'", "    hold: {index_k_dtype: bf16, hicache: on, kv_layout: paged}"),
    ("value-not-allowed", H,
     "    hold: {index_k_dtype: bf16, hicache: on}\n    predicts:\n"
     "      - {metric: corruption_rate, arm: treatment, at_most: 0.02,",
     "    hold: {index_k_dtype: fp16, hicache: on}\n    predicts:\n"
     "      - {metric: corruption_rate, arm: treatment, at_most: 0.02,",
     "'fp16' is not one of", "    hold: {index_k_dtype: fp16, hicache: on}"),
    ("hold-overlaps-isolated", H,
     "    hold: {index_k_dtype: bf16, hicache: on}\n    predicts:\n"
     "      - {metric: corruption_rate, arm: treatment, at_most: 0.02,",
     "    hold: {index_k_dtype: bf16, hicache: on, nixl_abort_fix: on}\n    predicts:\n"
     "      - {metric: corruption_rate, arm: treatment, at_most: 0.02,",
     "the variable this hypothesis isolates", "    hold: {index_k_dtype: bf16, hicache: on, nixl_abort_fix: on}"),
    ("metric-not-produced", H,
     "      - {metric: corruption_rate, arm: treatment, at_most: 0.02,\n         why: \"if the wedge",
     "      - {metric: leak_rate, arm: treatment, at_most: 0.02,\n         why: \"if the wedge",
     "metric 'leak_rate', which experiment 'agent-repro' does not produce",
     "      - {metric: leak_rate, arm: treatment"),
    ("unknown-arm", H, "      - {metric: corruption_rate, arm: treatment, at_most: 0.02,\n         why: \"if the wedge",
     "      - {metric: corruption_rate, arm: treatmnt, at_most: 0.02,\n         why: \"if the wedge",
     "names arm 'treatmnt'", "      - {metric: corruption_rate, arm: treatmnt"),
    ("empty-region", H,
     "      - {metric: corruption_rate, arm: treatment, at_most: 0.02,\n         why: \"if the wedge",
     "      - {metric: corruption_rate, arm: treatment, at_most: 0.02, at_least: 0.5,\n         why: \"if the wedge",
     "empty region", "      - {metric: corruption_rate, arm: treatment, at_most: 0.02, at_least: 0.5,"),
    # An entry copied from its parent with the id left as it was: the copy was refused as "its own parent",
    # which sent the reader to a parent line that is right.
    ("copied-entry-keeps-the-parents-id", H, "  - id: wedge-confound\n    parent: hicache-bf16-race\n",
     "  - id: hicache-bf16-race\n    parent: hicache-bf16-race\n",
     "(hypothesis hicache-bf16-race, field id): duplicate hypothesis id 'hicache-bf16-race' (also at line ",
     "  - id: hicache-bf16-race"),
    # target: belongs to a reachability prediction: on an A/B one it was taken silently, `show` then printed
    # "calls to pkg.mod:Cls (treatment) <= 0.02" while the analysis judged the metric.
    ("target-on-an-ab-prediction", H,
     "      - {metric: corruption_rate, arm: treatment, at_most: 0.02,\n         why: \"if the wedge",
     "      - {metric: corruption_rate, arm: treatment, at_most: 0.02, target: \"pkg.mod:Cls\",\n"
     "         why: \"if the wedge",
     "(hypothesis wedge-confound, prediction 1, field target): target: names a probed code object, for a "
     "reachability hypothesis",
     "      - {metric: corruption_rate, arm: treatment, at_most: 0.02, target:"),
    # target: where metric: was meant, on an A/B prediction: the hint said "remove target: (the metric is what is
    # judged)", which left a prediction on nothing.
    ("target-instead-of-metric-on-an-ab-prediction", H,
     "      - {metric: corruption_rate, arm: treatment, at_most: 0.02,\n         why: \"if the wedge",
     "      - {target: corruption_rate, arm: treatment, at_most: 0.02,\n         why: \"if the wedge",
     "Hint: replace target: with metric: naming one of the experiment's metrics",
     "      - {target: corruption_rate, arm: treatment, at_most: 0.02,"),
    # A prediction with neither metric: nor target: took metric's default, a probe's "calls", and was refused as a
    # prediction on a metric the experiment does not produce, which it never named.
    ("ab-prediction-without-metric", H,
     "      - {metric: corruption_rate, arm: treatment, at_most: 0.02,\n         why: \"if the wedge",
     "      - {arm: treatment, at_most: 0.02,\n         why: \"if the wedge",
     "(hypothesis wedge-confound, prediction 1): a prediction names the metric it judges (metric:)",
     "      - {arm: treatment, at_most: 0.02,"),
    # An arm name that is no identifier was reported at the `arms:` line, not at the arm's own.
    ("arm-name-with-a-space", H, "      treatment: {nixl_abort_fix: on}", "      \"treat ment\": {nixl_abort_fix: on}",
     "(hypothesis wedge-confound, field arms.treat ment): arm name 'treat ment' is not an identifier (letters, "
     "digits and _",
     "      \"treat ment\": {nixl_abort_fix: on}"),
    ("isolates-not-a-variable", H, "    isolates: nixl_abort_fix\n", "    isolates: abort_fix\n",
     "isolated variable 'abort_fix'", "    isolates: abort_fix"),
    ("guard-unknown-metric", H, "      - {metric: aborts, arm: treatment, equals: 0,",
     "      - {metric: abort_count, arm: treatment, equals: 0,",
     "guard on metric 'abort_count'", "      - {metric: abort_count, arm: treatment, equals: 0,"),
    ("bad-id", H, "  - id: wedge-confound\n", "  - id: Wedge Confound\n", "not a valid id", "  - id: Wedge Confound"),
    ("template-unknown-name", E, "        hicache={{ hicache }}", "        hicache={{ hicahe }}",
     "unknown name hicahe", "        hicache={{ hicahe }}"),
    ("bad-regex", E, "      sim_s: {regex: 'wall=(?P<value>[0-9.]+)s'}\n    fingerprint:\n      wb_version",
     "      sim_s: {regex: 'wall=(?P<value>[0-9.+)s'}\n    fingerprint:\n      wb_version", "invalid regex",
     "      sim_s: {regex: 'wall=(?P<value>[0-9.+)s'}"),
    ("experiment-id-mismatch", E, "id: agent-repro\n", "id: agent-repro-2\n", "does not match the file name",
     "id: agent-repro-2"),
    # A typo in an outcome name would count no unit at all and turn the verdict around.
    ("unit-filter-undeclared-outcome", E, "  leak: {kind: count, units: {outcome: leak},",
     "  leak: {kind: count, units: {outcome: laek},", "outcome='laek', which is not among unit.outcomes",
     "  leak: {kind: count, units: {outcome: laek},"),
    ("unit-filter-list-undeclared-outcome", E, "  leak: {kind: count, units: {outcome: leak},",
     "  leak: {kind: count, units: {outcome: [leak, salad]},", "outcome='salad', which is not among unit.outcomes",
     "  leak: {kind: count, units: {outcome: [leak, salad]},"),
    ("completed-undeclared-outcome", E, "  completed: [done, leak, maxrounds, no_tool]",
     "  completed: [done, leak, maxrounds, no_tol]", "unit.completed names 'no_tol'", "  completed: [done"),
    # A bound the metric can never reach: a rate of 5 (meant 5%), a count below zero.
    ("proportion-bound-above-one", H, "      - {metric: corruption_rate, arm: treatment, at_least: 0.05,",
     "      - {metric: corruption_rate, arm: treatment, at_least: 5,", "a proportion lies in [0, 1]",
     "      - {metric: corruption_rate, arm: treatment, at_least: 5,"),
    ("proportion-between-above-one", H, "      - {metric: corruption_rate, arm: treatment, at_least: 0.05,",
     "      - {metric: corruption_rate, arm: treatment, between: [0.5, 2],", "between 2 on metric 'corruption_rate'",
     "      - {metric: corruption_rate, arm: treatment, between: [0.5, 2],"),
    ("count-guard-below-zero", H, "      - {metric: aborts, arm: treatment, equals: 0,",
     "      - {metric: aborts, arm: treatment, equals: -1,", "a count lies in >= 0",
     "      - {metric: aborts, arm: treatment, equals: -1,"),
    # A region that holds every value the metric can take: nothing could fall outside it, so the prediction can
    # never be falsified (a guard never violated). The message says which and what to bound instead.
    ("proportion-at-least-zero", H, "      - {metric: corruption_rate, arm: treatment, at_least: 0.05,",
     "      - {metric: corruption_rate, arm: treatment, at_least: 0,",
     "at_least: 0 on metric 'corruption_rate' holds every proportion: this prediction can never be falsified",
     "      - {metric: corruption_rate, arm: treatment, at_least: 0,"),
    ("proportion-at-most-one", H, "      - {metric: corruption_rate, arm: control, at_most: 0.02,",
     "      - {metric: corruption_rate, arm: control, at_most: 1,", "at_most: 1 on metric 'corruption_rate' holds "
     "every proportion", "      - {metric: corruption_rate, arm: control, at_most: 1,"),
    ("proportion-between-zero-and-one", H, "      - {metric: corruption_rate, arm: treatment, at_least: 0.05,",
     "      - {metric: corruption_rate, arm: treatment, between: [0, 1],",
     "between: [0, 1] on metric 'corruption_rate' holds every proportion", "      - {metric: corruption_rate, arm: "
     "treatment, between: [0, 1],"),
    ("proportion-both-bounds-at-the-ends", H, "      - {metric: corruption_rate, arm: treatment, at_least: 0.05,",
     "      - {metric: corruption_rate, arm: treatment, at_least: 0, at_most: 1,",
     "at_least: 0 and at_most: 1 on metric 'corruption_rate' hold every proportion",
     "      - {metric: corruption_rate, arm: treatment, at_least: 0, at_most: 1,"),
    ("difference-between-minus-one-and-one", H,
     "      - {metric: corruption_rate, arm: treatment, at_least: 0.05,",
     "      - {metric: corruption_rate, difference: [treatment, control], between: [-1, 1],",
     "between: [-1, 1] on metric 'corruption_rate' holds every difference of proportions",
     "      - {metric: corruption_rate, difference: [treatment, control], between: [-1, 1],"),
    ("count-at-least-zero", H, "      - {metric: corrupted_tokens, arm: control, at_least: 1,",
     "      - {metric: corrupted_tokens, arm: control, at_least: 0,",
     "at_least: 0 on metric 'corrupted_tokens' holds every count: this prediction can never be falsified",
     "      - {metric: corrupted_tokens, arm: control, at_least: 0,"),
    ("calls-at-least-zero", H, '      - {target: "workbench.sim.hicache:DSAIndexerPoolHost", at_least: 1,',
     '      - {target: "workbench.sim.hicache:DSAIndexerPoolHost", at_least: 0,',
     "at_least: 0 on calls to workbench.sim.hicache:DSAIndexerPoolHost holds every count",
     '      - {target: "workbench.sim.hicache:DSAIndexerPoolHost", at_least: 0,'),
    ("guard-at-least-zero", H, "      - {metric: aborts, arm: treatment, equals: 0,",
     "      - {metric: aborts, arm: treatment, at_least: 0,",
     "at_least: 0 on metric 'aborts' holds every count: this guard can never be violated",
     "      - {metric: aborts, arm: treatment, at_least: 0,"),
    # A boolean is not a number and neither is text: YAML's `true` or a quoted "3" where a number goes is a
    # mistake to name, not a value to convert (true became 1 replicate, "3" became 3).
    ("replicates-boolean", E, "  replicates: 2\n", "  replicates: true\n",
     "(field design.replicates): must be a whole number, got true (a boolean)", "  replicates: true"),
    ("replicates-text", E, "  replicates: 2\n", "  replicates: \"3\"\n",
     "(field design.replicates): must be a whole number, got '3' (text: write it without quotes)",
     "  replicates: \"3\""),
    ("replicates-fraction", E, "  replicates: 2\n", "  replicates: 2.5\n",
     "(field design.replicates): must be a whole number, got 2.5", "  replicates: 2.5"),
    ("max-replicates-whole-float", E, "  max_replicates: 12\n", "  max_replicates: 12.0\n",
     "(field design.max_replicates): must be a whole number, got 12.0", "  max_replicates: 12.0"),
    ("health-attempts-text", E, "      attempts: 60\n", "      attempts: \"60\"\n",
     "(field profiles.sim.health.attempts): must be a whole number, got '60'", "      attempts: \"60\""),
    ("health-interval-boolean", E, "      interval_s: 0.25\n", "      interval_s: true\n",
     "(field profiles.sim.health.interval_s): must be a number, got true (a boolean)", "      interval_s: true"),
    ("workload-timeout-text", E, "      timeout_s: 600\n", "      timeout_s: \"600\"\n",
     "(field profiles.sim.workload.timeout_s): must be a number, got '600'", "      timeout_s: \"600\""),
    ("experiment-version-boolean", E, "version: 1\n", "version: true\n",
     "(field version): must be a whole number, got true", "version: true"),
    ("format-boolean", H, "format: 1\n", "format: true\n", "(field format): must be a whole number, got true",
     "format: true"),
    ("metric-guard-text", E, "  error: {kind: count, units: {outcome: error}, guard: true,",
     "  error: {kind: count, units: {outcome: error}, guard: \"yes\",",
     "must be true or false, got 'yes' (text", "  error: {kind: count"),
    ("prediction-bound-boolean", H, "      - {metric: corruption_rate, arm: control, at_most: 0.02,",
     "      - {metric: corruption_rate, arm: control, at_most: true,", "at_most): must be a number, got true",
     "      - {metric: corruption_rate, arm: control, at_most: true,"),
    ("prediction-between-text", H, "      - {metric: corruption_rate, arm: control, at_most: 0.02,",
     "      - {metric: corruption_rate, arm: control, between: [0, \"0.5\"],", "must be a number, got '0.5'",
     "      - {metric: corruption_rate, arm: control, between: [0, \"0.5\"],"),
    # between takes [low, high]: a third number, a lone one or a bare value were told in pydantic's words
    # ("Tuple should have at most 2 items after validation, not 3", "missing required field 1", "Input should be
    # a valid tuple").
    ("prediction-between-three", H, "      - {metric: corruption_rate, arm: control, at_most: 0.02,",
     "      - {metric: corruption_rate, arm: control, between: [0, 0.01, 0.02],",
     "(hypothesis hicache-bf16-race, prediction 2, field between): must be two numbers [low, high], got 3 values",
     "      - {metric: corruption_rate, arm: control, between: [0, 0.01, 0.02],"),
    ("prediction-between-one", H, "      - {metric: corruption_rate, arm: control, at_most: 0.02,",
     "      - {metric: corruption_rate, arm: control, between: [0.02],",
     "(hypothesis hicache-bf16-race, prediction 2, field between): must be two numbers [low, high], got 1 value",
     "      - {metric: corruption_rate, arm: control, between: [0.02],"),
    ("guard-between-number", H, "      - {metric: aborts, arm: treatment, equals: 0,",
     "      - {metric: aborts, arm: treatment, between: 0,",
     "(hypothesis wedge-confound, guard 1, field between): must be two numbers [low, high], got 0",
     "      - {metric: aborts, arm: treatment, between: 0,"),
    # A quoted number was told "(text: write it without quotes)", but unquoted it is still one number, not two.
    ("prediction-between-quoted-number", H, "      - {metric: corruption_rate, arm: control, at_most: 0.02,",
     "      - {metric: corruption_rate, arm: control, between: '0.05',",
     "(hypothesis hicache-bf16-race, prediction 2, field between): must be two numbers [low, high], got '0.05' (text)",
     "      - {metric: corruption_rate, arm: control, between: '0.05',"),
    # A quoted list of two numbers is the list, once written without its quotes.
    ("prediction-between-quoted-list", H, "      - {metric: corruption_rate, arm: control, at_most: 0.02,",
     "      - {metric: corruption_rate, arm: control, between: \"[0.01, 0.05]\",",
     "(hypothesis hicache-bf16-race, prediction 2, field between): must be two numbers [low, high], got "
     "'[0.01, 0.05]' (text: write it "
     "without quotes)", "      - {metric: corruption_rate, arm: control, between: \"[0.01, 0.05]\","),
    ("hypothesis-design-boolean", H, "    hold: {index_k_dtype: bf16, nixl_abort_fix: on, geometry_fix: off}\n",
     "    hold: {index_k_dtype: bf16, nixl_abort_fix: on, geometry_fix: off}\n    design: {replicates: yes}\n",
     "design.replicates): must be a whole number, got true (a boolean)", "    design: {replicates: yes}"),
    ("variable-min-text", E, "  seed: {type: int, min: 0,", "  seed: {type: int, min: \"0\",",
     "(field variables.seed.min): must be a number, got '0'", "  seed: {type: int, min: \"0\","),
    # A bare yes/no/on/off in a field that takes one of a few words: YAML read it as a boolean, which
    # pydantic's "Input should be 'abba', 'random' or 'alternate'" neither names nor explains.
    ("blocks-boolean", E, "  blocks: abba\n", "  blocks: on\n",
     "(field design.blocks): blocks: on was read as a boolean (true), not as a word", "  blocks: on"),
    ("config-format-boolean", E, "      format: env\n", "      format: yes\n",
     "(field profiles.sim.config.format): format: yes was read as a boolean (true), not as a word",
     "      format: yes"),
    ("target-kind-boolean", E, "    target: {kind: sim}", "    target: {kind: off}",
     "(field profiles.sim.target.kind): kind: off was read as a boolean (false)", "    target: {kind: off}"),
    ("hypothesis-kind-boolean", H, "    kind: reachability\n", "    kind: no\n",
     "kind: no was read as a boolean (false), not as a word", "    kind: no"),
    ("blocks-unknown-word", E, "  blocks: abba\n", "  blocks: abab\n",
     "(field design.blocks): must be one of 'abba', 'random' or 'alternate', got 'abab'", "  blocks: abab"),
    # Over SSH an env entry is exported by the remote shell: a name it cannot export was dropped there while the
    # fingerprint recorded it as set.
    ("ssh-env-not-a-shell-name", E, "      user: root\n    context:\n",
     "      user: root\n    env: {LOG-LEVEL: debug}\n    context:\n",
     "(field profiles.sglang-pd.env): env name 'LOG-LEVEL' is not a shell variable name",
     "    env: {LOG-LEVEL: debug}"),
    # A format this wb does not read was told as a wrong word ("must be one of 1, got 2"), not as a file from a
    # newer wb.
    ("hypotheses-format-2", H, "format: 1\n", "format: 2\n",
     "(field format): this wb reads format 1 only, got 2; the file may come from a newer wb", "format: 2"),
    ("experiment-format-0", E, "format: 1\n", "format: 0\n", "(field format): this wb reads format 1 only, got 0",
     "format: 0"),
    # An ssh jump chain's hops are split on commas: an empty one ("a,,b", a trailing comma) was connected to as the
    # host "" at run time.
    ("ssh-jump-empty-hop", E, "      user: root\n    context:\n",
     "      user: root\n      jump: bastion,,gw\n    context:\n",
     "(field profiles.sglang-pd.target.jump): jump 'bastion,,gw': hop 2 is empty", "      jump: bastion,,gw"),
    ("ssh-jump-trailing-comma", E, "      user: root\n    context:\n",
     "      user: root\n      jump: 'bastion, '\n    context:\n",
     "(field profiles.sglang-pd.target.jump): jump 'bastion, ': hop 2 is empty", "      jump: 'bastion, '"),
    # A hop's port out of range was dialled modulo 65536 (getaddrinfo's wrap): bastion:70000 reached port 4464.
    ("ssh-jump-port-out-of-range", E, "      user: root\n    context:\n",
     "      user: root\n      jump: root@bastion:70000\n    context:\n",
     "(field profiles.sglang-pd.target.jump): jump 'root@bastion:70000': hop 1's port 70000 is not 1-65535",
     "      jump: root@bastion:70000"),
    # An empty config path was taken at run time for the current folder ('cannot read serve file .').
    ("config-path-empty", E, '      path: "{{ sim_dir }}/serve.sh"', '      path: ""',
     "(field profiles.sim.config.path): config.path is empty", '      path: ""'),
    ("config-path-blank", E, '      path: "{{ sim_dir }}/serve.sh"', '      path: "  "',
     "(field profiles.sim.config.path): config.path is empty", '      path: "  "'),
    ("config-path-empty-context", E, "      serve_script: /root/serve_dsv4_prefill.sh", '      serve_script: ""',
     "(field profiles.sglang-pd.context.serve_script): config.path \"{{ serve_script }}\" renders empty",
     '      serve_script: ""'),
    # A value of the wrong shape was told in pydantic's words, naming wb's own classes ("Input should be a valid
    # dictionary or instance of Prediction"); it says what the field takes and what it got.
    ("prediction-as-text", H, "    predicts:\n      - {metric: corruption_rate, arm: treatment, at_least: 0.05,",
     "    predicts:\n      - corruption_rate >= 0.05\n"
     "      - {metric: corruption_rate, arm: treatment, at_least: 0.05,",
     "(hypothesis hicache-bf16-race, prediction 1): must be a mapping ({metric: ..., arm: ..., at_most: ...}), "
     "got the text "
     "'corruption_rate >= 0.05'", "      - corruption_rate >= 0.05"),
    ("hold-as-text", H, "    hold: {index_k_dtype: bf16, hicache: on}", "    hold: index_k_dtype=bf16",
     "(hypothesis wedge-confound, field hold): must be a mapping (name: value), got the text 'index_k_dtype=bf16'",
     "    hold: index_k_dtype=bf16"),
    ("predicts-as-mapping", H, "    predicts:\n      - {metric: corruption_rate, arm: treatment, at_most: 0.02,",
     "    predicts:\n        {metric: corruption_rate, arm: treatment, at_most: 0.02,",
     "(hypothesis wedge-confound, field predicts): must be a list (- item lines, or [a, b]), got a mapping",
     "    predicts:"),
    # YAML indents with spaces only: a tab said "found character that cannot start any token", naming no tab.
    ("yaml-tab-indent", H, "    falsified_if: Corruption persists in the treatment arm with zero aborts.",
     "\tfalsified_if: Corruption persists in the treatment arm with zero aborts.",
     "invalid YAML: a tab at column 1: YAML indents with spaces", "\tfalsified_if"),
    ("yaml-tab-indent-experiment", E, "      attempts: 60\n", "  \t    attempts: 60\n",
     "invalid YAML: a tab at column 3: YAML indents with spaces", "  \t    attempts"),
    ("collect-undeclared-metric", E, "      timeouts: {unit_field: timeouts, aggregate: nonzero, parse: int}",
     "      timeout_count: {unit_field: timeouts, aggregate: nonzero, parse: int}", "not a declared metric",
     "      timeout_count: {unit_field:"),
]


def _line_of(text: str, needle: str, start: int) -> int:
    """Line of the line starting with `needle` nearest to character offset `start` (where the edit was made)."""
    at = text.count("\n", 0, start) + 1
    hits = [i for i, line in enumerate(text.splitlines(), 1) if line.startswith(needle)]
    assert hits, f"{needle!r} not in the mutated file"
    return min(hits, key=lambda i: (abs(i - at), i))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_malformed_file_is_refused_with_file_line_and_nothing_written(case, workbench_dir: Path, seed_csv: Path, cli):
    _, rel, old, new, words, line_text = case
    path = workbench_dir / rel
    text = path.read_text()
    assert old in text, f"fixture text not found in {rel}: {old!r}"
    mutated = text.replace(old, new, 1)  # the first occurrence (the default profile's, in experiment files)
    path.write_text(mutated)
    db = workbench_dir / "store.duckdb"

    code, out, err = cli("import", "evidence", str(seed_csv), "--db", str(db), "--root", str(workbench_dir))

    assert code == 2, (out, err)
    assert err.startswith("Error: ")
    assert words in err, err
    assert str(path) in err, err
    if line_text is not None:
        assert f"{path}:{_line_of(mutated, line_text, text.index(old))}" in err, err
    assert "Traceback" not in err
    assert not db.exists(), "a refused input must not create or write the store"


def test_validate_accepts_the_shipped_files(cli):
    code, out, err = cli("hypothesis", "validate")
    assert code == 0, err
    assert "hypotheses ok" in out


def test_quoted_prose_of_several_lines_still_loads(workbench_dir: Path, cli):
    # The refusal of a quoted text that takes in the file's keys must leave prose alone: a line of it may start
    # with a word and a colon that is no key of the file, or with a dash.
    import json

    path = workbench_dir / "hypotheses.yaml"
    text = path.read_text()
    old = "    claim: The HiCache+bf16 corruption is a side effect of the NIXL abort wedge.\n"
    path.write_text(text.replace(old, '    claim: "The HiCache+bf16 corruption is a side effect\n'
                                      '      of the NIXL abort wedge.\n      Note: bf16 doubles the transfer\n'
                                      "      - and so the timeouts.\"\n"))
    code, out, err = cli("hypothesis", "show", "wedge-confound", "--json", "--root", str(workbench_dir),
                         "--db", str(workbench_dir / "wb.duckdb"))
    assert code == 0, err
    assert json.loads(out)["claim"] == ("The HiCache+bf16 corruption is a side effect of the NIXL abort wedge. "
                                        "Note: bf16 doubles the transfer - and so the timeouts.")


def test_difference_of_rates_may_be_negative(workbench_dir: Path, cli):
    """A difference of two proportions lies in [-1, 1]: a negative bound on it is a real prediction."""
    path = workbench_dir / H
    old = "      - {metric: corruption_rate, arm: treatment, at_least: 0.05,"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, "      - {metric: corruption_rate, difference: [control, treatment], "
                                      "at_least: -0.5,", 1))
    code, out, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    assert code == 0, err
    path.write_text(text.replace(old, "      - {metric: corruption_rate, difference: [control, treatment], "
                                      "at_least: -1.5,", 1))
    code, out, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    assert code == 2 and "a difference of proportions lies in [-1, 1]" in err, err


def test_validate_names_the_bad_file(workbench_dir: Path, cli):
    bad = workbench_dir / "experiments" / "agent-repro.yaml"
    bad.write_text(bad.read_text().replace("default_profile: sim", "default_profile: gpu"))
    code, _, err = cli("hypothesis", "validate", str(bad))
    assert code == 2
    assert f"{bad}:" in err and "default_profile 'gpu'" in err


def test_empty_file(workbench_dir: Path, cli):
    (workbench_dir / "hypotheses.yaml").write_text("# nothing yet\n")
    code, _, err = cli("hypothesis", "list", "--root", str(workbench_dir))
    assert code == 2
    assert "the file is empty" in err


def test_missing_template_file_names_the_experiment_line(workbench_dir: Path, cli):
    exp = workbench_dir / "experiments" / "agent-repro.yaml"
    (workbench_dir / "experiments" / "templates" / "serve_dsv4_prefill.sh.j2").unlink()
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    assert code == 2
    line = next(i for i, t in enumerate(exp.read_text().splitlines(), 1) if "template_file:" in t)
    assert f"{exp}:{line}" in err and "cannot be read" in err


@pytest.mark.parametrize("word,value", [("on", True), ("off", False), ("yes", True), ("no", False)])
def test_a_bare_word_a_literal_field_takes_is_told_to_be_quoted(tmp_path: Path, word: str, value: bool):
    """Where the word itself is allowed (a field taking on/off), quoting it is the whole cure: say so, with the
    file, line and field, and no pydantic text."""
    from typing import Literal

    from pydantic import BaseModel, ConfigDict

    from workbench.errors import ConfigError
    from workbench.registry.schema_errors import parse_model
    from workbench.registry.yamlio import load_located

    class Switch(BaseModel):
        model_config = ConfigDict(extra="forbid")
        name: str
        mode: Literal["on", "off", "yes", "no", "auto"]

    path = tmp_path / "switch.yaml"
    doc = load_located(path, text=f"name: a\nmode: {word}\n")
    with pytest.raises(ConfigError) as ei:
        parse_model(Switch, doc)
    msg = str(ei.value)
    assert msg.startswith(f"{path}:2 (field mode): mode: {word} was read as a boolean ({str(value).lower()})"), msg
    assert f'quote it: mode: "{word}"' in msg and "Input should" not in msg, msg
    assert parse_model(Switch, load_located(path, text=f'name: a\nmode: "{word}"\n')).mode == word


def test_an_empty_config_path_is_refused_by_run_before_anything_starts(workbench_dir: Path, cli, tmp_path: Path,
                                                                       monkeypatch):
    """wb hypothesis run on a profile whose config.path is empty: refused at load naming the file and line of
    the field, exit 2, no store, no pdsim started (it ran, and failed in 'cannot read serve file .')."""
    exp = workbench_dir / E
    text = exp.read_text()
    exp.write_text(text.replace('      path: "{{ sim_dir }}/serve.sh"', '      path: ""', 1))
    line = next(i for i, t in enumerate(exp.read_text().splitlines(), 1) if t == '      path: ""')
    monkeypatch.setenv("WB_SIM_DIR", str(tmp_path / "sim"))
    db = tmp_path / "store.duckdb"
    code, out, err = cli("hypothesis", "run", "wedge-confound", "--replicates", "1", "--db", str(db),
                         "--root", str(workbench_dir))
    assert code == 2, (out, err)
    assert err.lstrip().startswith("Error: ") and f"{exp}:{line}" in err and "config.path is empty" in err, err
    assert "Traceback" not in err
    assert not db.exists() and not (tmp_path / "sim").exists()


def test_a_folder_without_hypotheses_yaml_points_at_root(tmp_path: Path, cli, monkeypatch):
    # "no hypotheses.yaml in /tmp" hinted at WB_ROOT only, and --root naming such a folder said "file not found".
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WB_ROOT", raising=False)
    code, out, err = cli("hypothesis", "list")
    assert code == 2 and err.startswith("Error: no hypotheses.yaml in ") and "--root DIR" in err, err
    code, out, err = cli("hypothesis", "list", "--root", str(tmp_path))
    assert code == 2 and f"Error: no hypotheses.yaml in {tmp_path}" in err and "--root DIR" in err, err
    assert "Traceback" not in err and not any(tmp_path.iterdir())


def test_a_file_that_is_not_a_mapping_says_so_in_wbs_words(tmp_path: Path, cli):
    (tmp_path / "hypotheses.yaml").write_text("just a line of text\n")
    code, _, err = cli("hypothesis", "validate", "--root", str(tmp_path))
    assert code == 2 and "Traceback" not in err
    assert err.startswith(f"Error: {tmp_path / 'hypotheses.yaml'}:1: must be a mapping"), err
    assert "instance of" not in err and "HypothesesFile" not in err, err


def test_a_long_file_without_aliases_is_not_blamed_on_aliases(monkeypatch):
    # The bound on values counts those an alias repeats too; a file simply that long was told it nested aliases.
    from workbench.errors import ConfigError
    from workbench.registry import yamlio

    monkeypatch.setattr(yamlio, "MAX_NODES", 50)
    long = "format: 1\nhypotheses:\n" + "".join(f"  - {{id: h{i}}}\n" for i in range(40))
    with pytest.raises(ConfigError) as exc:
        yamlio.load_located("hypotheses.yaml", text=long)
    assert "more than 50 values" in exc.value.message and "alias" not in str(exc.value), str(exc.value)
    bomb = "a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
    with pytest.raises(ConfigError) as exc:
        yamlio.load_located("bomb.yaml", text=bomb)
    assert "alias" in str(exc.value)


@pytest.mark.parametrize("line,quoted", [
    ('note: the "wedge": a race', "note: 'the \"wedge\": a race'"),
    ("note: C:\\wb: it's a path", "note: 'C:\\wb: it''s a path'"),
    ("- note: the wedge: a race  ", 'note: "the wedge: a race"'),
])
def test_the_quoting_hint_quotes_the_value_as_yaml_reads_it_back(line: str, quoted: str):
    # The value the hint writes out must load as the text the line meant: a '"' or a '\' in it takes single quotes.
    from workbench.errors import ConfigError
    from workbench.registry import yamlio

    with pytest.raises(ConfigError) as exc:
        yamlio.load_located("x.yaml", text=f"items:\n  {line}\n")
    assert exc.value.hint is not None and f"quote the value: {quoted}" in exc.value.hint, exc.value.hint
    assert yamlio.load_located("x.yaml", text=quoted + "\n").data["note"] == line.split(": ", 1)[1].strip()


@pytest.mark.parametrize("text,field,kept", [
    ("claim: the rate drops #2 of the fixes\n", "field claim", "the rate drops #2 of the fixes"),
    ("steps:\n  - run foo --tag x #1\n", "field steps item 1", "run foo --tag x #1"),
    # A value that runs on is cut on its last line.
    ("claim: the rate drops\n  when the fix is on #2\n", "field claim", "the rate drops when the fix is on #2"),
    ("claim: the rate drops  # see the fixes\n", "field claim", "the rate drops  # see the fixes"),
])
def test_a_comment_that_cuts_a_plain_value_of_words_is_refused(text: str, field: str, kept: str):
    from workbench.errors import ConfigError
    from workbench.registry import yamlio

    with pytest.raises(ConfigError) as exc:
        yamlio.load_located("x.yaml", text=text)
    err = exc.value
    assert err.line == len(text.splitlines()) and err.field == field, (err.line, err.field)
    assert 'would be dropped as a comment' in err.message, err.message
    assert "put the comment on a line of its own" in (err.hint or ""), err.hint
    quoted = err.hint.split("quote the value: ", 1)[1].split(" (", 1)[0]
    data = yamlio.load_located("x.yaml", text=quoted + "\n").data
    assert data in ({field.removeprefix("field "): kept}, [kept]), (quoted, data)


@pytest.mark.parametrize("text", [
    "sessions: 80  # the seed's size\n",
    "hold: {a: b}  # why\n",
    "arms: [control, treatment] # both\n",
    "model: llama-3  # the 8B one\n",
    'claim: "the rate drops"  # a note\n',
    "claim: 'the rate drops' # a note\n",
    "hold:  # why\n  a: b\n",
    "claim: >-\n  the rate drops #2 of the fixes\n",
    "claim: the rate drops\n# a comment on its own line\n",
    "items:\n  - one\n  - two  # the second\n",
])
def test_a_comment_after_a_number_a_collection_a_token_or_a_quoted_value_still_loads(text: str):
    from workbench.registry import yamlio

    assert yamlio.load_located("x.yaml", text=text).data is not None


def test_a_duplicate_id_names_the_line_of_the_first(workbench_dir: Path, cli):
    """The duplicate's own place is given as a field path counted from 0 (hypotheses.2.id) while the first was
    given as "entry 1", counted from 1: two numberings in one line. The first is now named by its line."""
    path = workbench_dir / "hypotheses.yaml"
    text = path.read_text()
    first = text.splitlines().index("  - id: wedge-confound") + 1
    path.write_text(text.replace("  - id: token-granular-geometry-deployment", "  - id: wedge-confound", 1))
    code, _, err = cli("hypothesis", "validate", str(path))
    assert code == 2
    assert f"duplicate hypothesis id 'wedge-confound' (also at line {first})" in err, err
    # The duplicate was a child of the entry whose id it took ("parent: wedge-confound"): it was also told "a
    # hypothesis cannot be its own parent", a second error that followed only from the id.
    path.write_text(text.replace("  - id: pool-configurator-overcommit", "  - id: wedge-confound", 1))
    code, _, err = cli("hypothesis", "validate", str(path))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert code == 2 and len(errors) == 1, err
    assert f"duplicate hypothesis id 'wedge-confound' (also at line {first})" in errors[0], err
    # A descendant given the root's id: its parent's chain leads back to the root's id, and was told as a lineage
    # cycle, a third error at the next line (the second, a tested_by naming the old id, is the rename's own).
    path.write_text(text.replace("  - id: token-granular-geometry-deployment", "  - id: hicache-bf16-race", 1))
    code, _, err = cli("hypothesis", "validate", str(path))
    assert code == 2 and "duplicate hypothesis id 'hicache-bf16-race' (also at line 6)" in err, err
    assert "lineage cycle" not in err, err


def test_a_duplicate_id_that_also_fails_its_schema_is_told_both_at_once(workbench_dir: Path, cli):
    """An entry giving an id already given, with a mistyped field too, was told its schema problem alone (the
    duplicate check saw only entries that passed the schema): the duplicate showed once that was fixed. Both are
    told at once, each at its line, by validate, by a command that sets the entry apart (list, show) and by the
    loader every other command stops on."""
    from workbench.errors import ConfigErrors
    from workbench.registry import load_registry

    path = workbench_dir / "hypotheses.yaml"
    text = path.read_text()
    first = text.splitlines().index("  - id: wedge-confound") + 1
    text = text.replace("  - id: dead-code-hicache-off\n", "  - id: wedge-confound\n    falsifed_if: x\n")
    path.write_text(text)
    at = text.splitlines().index("    falsifed_if: x")  # the duplicate id's line, 1-based; the typo's is the next
    dup = f"{path}:{at} (hypothesis wedge-confound, field id): duplicate hypothesis id 'wedge-confound' (also at " \
          f"line {first})"
    typo = f"{path}:{at + 1} (hypothesis wedge-confound, field falsifed_if): unknown field 'falsifed_if'"
    code, _, err = cli("hypothesis", "validate", "--root", str(workbench_dir))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert code == 2 and errors == [f"Error: {dup}", f"Error: {typo}"], err
    # One that reads the other entries warns of both; the id's first entry is whole, so the line names the other.
    for command in (("hypothesis", "list"), ("hypothesis", "show", "hicache-bf16-race")):
        code, _, err = cli(*command, "--root", str(workbench_dir))
        warnings = [ln for ln in err.splitlines() if ln.startswith("Warning: ")]
        assert code == 0 and warnings == [f"Warning: {dup}", f"Warning: {typo}"], (command, err)
        assert (f"2 problems found; left out: the entry 'wedge-confound' at line {at}; `wb hypothesis validate` "
                "checks every file and lists what it finds") in err, err
    with pytest.raises(ConfigErrors) as told:
        load_registry(workbench_dir)
    assert [p.message for p in told.value.problems] == [dup, typo], told.value.problems


def test_a_mappings_whole_number_key_is_named_as_a_key_not_a_list_item():
    """`hold: {5: on}`: the error's place read "hold item 6", as if the key 5 were the sixth item of a list."""
    from workbench.registry.yamlio import field_name

    data = {"hypotheses": [{"id": "h1", "hold": {5: "on"}, "predicts": [{"metric": "m"}]}]}
    assert field_name(("hypotheses", 0, "hold", 5), data) == "hypothesis h1, field hold.5"
    assert field_name(("hypotheses", 0, "predicts", 0, "metric"), data) == "hypothesis h1, prediction 1, field metric"


@pytest.mark.parametrize("head,indent", [("", ""), ("format: 1\nhypotheses:\n", "  ")])
def test_a_duplicate_whole_number_key_is_named_by_its_hypothesis_and_key_path(tmp_path: Path, cli, head, indent):
    # YAML's own checks named the place without the parsed file: the key 5 of `hold` read as a sixth list item,
    # and the entry as "the list item 1" (bare list) or "hypothesis 1", not by its id as every later check names it.
    path = tmp_path / "hypotheses.yaml"
    path.write_text(head + "".join(indent + ln + "\n" for ln in ("- id: h1", "  claim: x", "  hold: {5: on, 5: off}")))
    code, _, err = cli("hypothesis", "validate", str(path))
    assert code == 2 and "Traceback" not in err, err
    line = len(path.read_text().splitlines())
    assert err.startswith(f"Error: {path}:{line} (hypothesis h1, field hold.5): duplicate key 5 (first at line "
                          f"{line})\n"), err


def test_a_duplicate_id_beside_several_schema_problems_is_counted_with_them_all(workbench_dir: Path, cli):
    """The loader every command that stops on the file uses told a duplicate id beside the schema's first problem,
    whose own text announced "1 more problem after this one", under a summary of "2 problems found": three, counted
    two. With a duplicate it tells every problem, as validate does, and counts them."""
    path = workbench_dir / "hypotheses.yaml"
    path.write_text(path.read_text().replace("  - id: dead-code-hicache-off\n",
                                             "  - id: wedge-confound\n    falsifed_if: x\n    notez: y\n"))
    code, _, err = cli("review", "wedge-confound", "--comment", "-m", "x", "--root", str(workbench_dir))
    errors = [ln for ln in err.splitlines() if ln.startswith("Error: ")]
    assert code == 2 and len(errors) == 3 and "more problem" not in err, err
    assert ["duplicate hypothesis id" in errors[0], "'falsifed_if'" in errors[1], "'notez'" in errors[2]] == [True] * 3
    assert err.rstrip().splitlines()[-1] == "3 problems found", err
