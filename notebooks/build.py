"""Write the notebooks of this folder from the cells below (nbformat v4, no outputs).

Run ``uv run python notebooks/build.py`` after editing a cell here; never edit the ``.ipynb`` files
by hand, and never commit them with outputs (``tests/test_notebooks.py`` checks both). Every
notebook runs offline on contextkit's built-in example in seconds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat as _nbformat

nbformat: Any = _nbformat  # nbformat's functions carry no annotations

HERE = Path(__file__).parent

Cell = tuple[str, str]  # ("md" | "code", source)


def md(text: str) -> Cell:
    return ("md", text.strip("\n"))


def code(text: str) -> Cell:
    return ("code", text.strip("\n"))


ARRAY_IS_THE_STATE: list[Cell] = [
    md("""
# 1. The message array is the state

An agent's model is stateless. Everything it knows on call *k* is the message array the harness
sends on call *k*: system prompt, tool schemas, and every message so far. So each call re-sends
the whole history, and the input billed over a session grows **quadratically** with the number
of calls. Prompt caching makes the re-sent part cheaper, but only for a prefix that is byte for
byte the same as one written before, within the cache's TTL.

This notebook measures both effects on contextkit's built-in example: a generated, deterministic
coding-agent session (150 calls, 4 user turns, large tool results, parallel tool calls, thinking).
No network, no API key.
"""),
    code("""
import matplotlib.pyplot as plt
import numpy as np

from contextkit.accounting import price_session
from contextkit.cache import TTL_1H_S, TTL_5M_S, AnthropicCache
from contextkit.session.examples import ExampleSpec, generate_session
from contextkit.tokens import counter_for

session = generate_session(ExampleSpec())  # seed 7: the same session on every machine
counter = counter_for(session.model_info)  # an offline estimate for Claude; memoised per block
calls = session.calls
print(f"{len(calls)} calls on {session.model}, {len(session.user_turns())} user turns")
"""),
    md("""
## Each request is the previous one plus what happened since

Call *k*'s messages start with call *k-1*'s messages, unchanged; the response and the tool results
are appended. Nothing is ever taken out (no strategy is applied here).
"""),
    code("""
def extends(previous, current):
    n = len(previous.messages)
    return current.messages[:n] == previous.messages


always = all(extends(a.request, b.request) for a, b in zip(calls, calls[1:]))
sizes = [len(c.request.messages) for c in calls]
print("every request extends the previous one:", always)
print("messages per request:", sizes[:6], "...", sizes[-3:])
"""),
    md("""
## Input is quadratic in the number of calls

`price_session` counts the tokens of every request (an offline estimate for Claude models) and
simulates the prompt cache. `Ledger.quadratic_fit()` fits the cumulative input tokens against the
call index *k* as `a + b*k + c*k^2`. When the whole history is re-sent, `c` is about half the
average growth of the context per call.
"""),
    code("""
ledger = price_session(session, counter)
a, b, c = ledger.quadratic_fit()
k = np.arange(1, ledger.calls + 1)
growth = float(np.diff(ledger.context_tokens).mean())
print(f"fit: {a:,.0f} + {b:,.1f} k + {c:,.1f} k^2")
print(f"half the mean growth per call: {growth / 2:,.1f} tokens (c = {c:,.1f})")
print(f"input sent: {int(ledger.context_tokens.sum()):,} tokens for "
      f"{int(ledger.new_tokens.sum()):,} unique (resend ratio {ledger.resend_ratio:.0f}x)")

fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4))
left.plot(k, ledger.context_tokens)
left.set(xlabel="call", ylabel="input tokens", title="Context sent per call")
right.plot(k, ledger.cumulative_input(), label="cumulative input")
right.plot(k, a + b * k + c * k**2, "--", label="quadratic fit")
right.set(xlabel="call", ylabel="tokens", title="Cumulative input tokens")
right.legend()
plt.show()
"""),
    md("""
## What the cache does to the bill

The same session priced three ways with `price_session(..., cache=AnthropicCache(...))`:
caching off, and a breakpoint on the last block of each request with a 5-minute or a 1-hour TTL.
Reads cost a tenth of the input price; writes cost 1.25x (5m) or 2x (1h). The example pauses
15 minutes between user turns, longer than the 5-minute TTL, so with 5m each turn starts cold.
"""),
    code("""
minimum = session.model_info.cache_min_tokens()
caches = {
    "no caching": AnthropicCache(min_tokens=minimum, placement="off"),
    "5m cache": AnthropicCache(min_tokens=minimum, placement="auto", ttl_s=TTL_5M_S),
    "1h cache": AnthropicCache(min_tokens=minimum, placement="auto", ttl_s=TTL_1H_S),
}
ledgers = {name: price_session(session, counter, cache=cache) for name, cache in caches.items()}
for name, priced in ledgers.items():
    t = priced.simulated.totals()
    writes = t["cache_write_5m"] + t["cache_write_1h"]
    print(f"{name:>11}: ${t['cost_usd']:7.2f}  uncached {t['input']:>11,}  "
          f"writes {writes:>9,}  reads {t['cache_read']:>11,}")

fig, ax = plt.subplots(figsize=(8, 4))
for name, priced in ledgers.items():
    ax.plot(k, np.cumsum(priced.simulated.cost_usd), label=name)
ax.set(xlabel="call", ylabel="USD", title="Cumulative cost of the session")
ax.legend()
plt.show()
"""),
    md("""
Caching divides the bill by about seven here, but it does not change its shape: the re-sent
history still grows with every call. To bend the curve itself, something has to leave the array.
That is what strategies do (notebook 2), and every such edit invalidates the cached prefix behind
it, which is the trade-off the replay measures.
"""),
]


STRATEGIES_COMPARED: list[Cell] = [
    md("""
# 2. Strategies compared

A strategy decides what stays in the array. `contextkit.replay._compare.run_strategy(session, spec)`
replays a session call by call: at each call the view is the previous view plus what the
recording appended, shaped by the strategy; every view is priced with the cache simulator and
scored on **recall** (the share of facts later responses used that the view still held).

Replay keeps the recorded responses: it measures what each view would have cost and kept, not
how the model would have acted on a different view.

First on the built-in example (sized so the full tape outgrows the 200k window, as in
`contextkit demo`), then, if `CONTEXTKIT_CORPUS` points at recorded sessions, on one of them.
"""),
    code("""
import os
from pathlib import Path

import matplotlib.pyplot as plt

from contextkit.replay import SESSION_SUFFIXES, run_strategy
from contextkit.demo import demo_spec, pick_best
from contextkit.errors import ContextkitError
from contextkit.session.examples import generate_session
from contextkit.formats import load
from contextkit.accounting.plots import plot_context, plot_cumulative_cost
from contextkit.strategies import PRESETS
from contextkit.tokens import counter_for

session = generate_session(demo_spec())
counter = counter_for(session.model_info)  # shared by the replays: each block is counted once
replays = [run_strategy(session, name, counter=counter) for name in PRESETS]
print("presets:", ", ".join(PRESETS))
"""),
    code("""
def show(replays):
    print(f"{'strategy':<27}{'cost':>9}{'reads':>12}{'writes':>11}{'peak':>9}"
          f"{'compact':>9}{'overflow':>9}{'recall':>8}")
    for rep in replays:
        s = rep.summary()
        cost = "unknown" if s["cost_usd"] is None else f"${s['cost_usd']:.2f}"
        print(f"{rep.strategy:<27}{cost:>9}{s['cache_read']:>12,}{s['cache_write']:>11,}"
              f"{s['peak_context_tokens']:>9,}{s['compactions']:>9}{s['overflow_calls']:>9}"
              f"{s['recall']:>8.3f}")


show(replays)
best = pick_best(replays)
print("\\nbest (cheapest with recall >= 0.9 and no overflow):", best.strategy if best else None)
"""),
    md("""
The sawtooth: each compaction drops the context, which then grows again. A strategy that
compacts a little on every call (a sliding window moving one message at a time) keeps the context
just under its budget but re-writes the cache on every call; one that compacts rarely and deeply
pays for one rewrite and then reads cheaply again.
"""),
    code("""
def draw(replays, title):
    labels = [r.strategy for r in replays]
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 4.5))
    plot_context(left, [r.ledger for r in replays], labels)
    left.axhline(replays[0].window, color="grey", linestyle=":", label="context window")
    plot_cumulative_cost(right, [r.ledger for r in replays], labels)
    left.legend(fontsize=7)
    fig.suptitle(title)
    plt.show()


draw(replays, "Built-in example")
"""),
    md("""
What a strategy removed, and what it cost in recall: the receipts of the first compaction of the
best strategy, and a few facts a later call needed that its view had lost.
"""),
    code("""
if best is not None:
    first = next((i for i, r in enumerate(best.receipts) if r), None)
    if first is not None:
        receipts = best.receipts[first]
        freed = sum(r.tokens_freed for r in receipts)
        print(f"{best.strategy}, first compaction at call {first}: {len(receipts)} edits, "
              f"{freed:,} tokens freed; the first three:")
        for r in receipts[:3]:
            print(f"  {r.action} {r.detail} (message {r.message_index}, {r.tokens_freed:,} tokens)")
    for call, fact in best.recall.examples[:5]:
        print(f"lost at call {call}: {fact[:80]}")
"""),
    md("""
## A recorded session (optional)

Set `CONTEXTKIT_CORPUS` to a folder of recorded sessions (any format contextkit reads). The cell
takes the largest file under 1 MB that holds a session of at least 10 calls, and compares the
recording itself (`as-recorded`: the recorded bill where the file has usage) with a few presets.
"""),
    code("""
def pick_recorded(root, max_bytes=1_000_000, min_calls=10):
    files = [p for p in Path(root).rglob("*") if p.suffix in SESSION_SUFFIXES and p.is_file()]
    files = [p for p in files if p.stat().st_size < max_bytes and "subagents" not in p.parts]
    for path in sorted(files, key=lambda p: (-p.stat().st_size, str(p))):
        try:
            loaded = load(path, lenient=True)
        except ContextkitError:
            continue
        for candidate in loaded.sessions:
            if len(candidate.calls) >= min_calls:
                return candidate
    return None


corpus = os.environ.get("CONTEXTKIT_CORPUS")
recorded = pick_recorded(corpus) if corpus else None
if recorded is None:
    print("CONTEXTKIT_CORPUS is not set (or holds no session of 10+ calls): skipped")
else:
    print(f"{recorded.path}: {len(recorded.calls)} calls, {recorded.model}")
    names = ("as-recorded", "none", "evict-tool-results", "anthropic-clear-tool-uses")
    recorded_replays = [run_strategy(recorded, name) for name in names]
    show(recorded_replays)
    draw(recorded_replays, Path(recorded.path).name)
"""),
]


COST_PER_TICKET: list[Cell] = [
    md("""
# 3. Cost per ticket, and what-ifs

A *ticket* is one unit of work: a session with its subagents. `contextkit.estimate._core` prices
tickets call by call with the cache simulator and splits each dollar two ways: by **content**
(fixed prefix, re-sent history, new input, output) and by **billing class** (uncached input,
cache writes, cache reads, output). A what-if (`Change`) edits the requests (more tools, a longer
system prompt, another cache TTL or model) and re-simulates; it never scales a total.

Then the same from a workload **profile**: distributions fitted to the recordings, drawn as
thousands of tickets (seeded Monte Carlo), beside a closed-form expectation.
"""),
    code("""
import matplotlib.pyplot as plt
import numpy as np

from contextkit.estimate import Change, Ticket, price_tickets
from contextkit.estimate import fit_profile
from contextkit.estimate import dump_profile, with_cache
from contextkit.estimate import WhatIfs, estimate_from_profile
from contextkit.estimate import synthetic_tools
from contextkit.estimate import breakdown, summary
from contextkit.session.examples import ExampleSpec, generate_session
from contextkit.tokens import counter_for

session = generate_session(ExampleSpec())
tickets = [Ticket("example", (session,))]
baseline, _recorded = price_tickets(tickets, Change())
print(f"one ticket ({len(session.calls)} calls, {session.model}): "
      f"${summary(baseline)['mean_usd']:.2f}")
"""),
    code("""
parts = breakdown(baseline)
total = summary(baseline)["mean_usd"]
for group, keys in (("by content", ("prefix", "history", "new_input", "output")),
                    ("by billing class", ("uncached", "cache_write", "cache_read", "output"))):
    print(group)
    for key in keys:
        usd, tokens = parts[f"{key}_usd"], parts[f"{key}_tokens"]
        print(f"  {key:<12}{tokens:>14,.0f} tokens  ${usd:6.2f}  {usd / total:5.0%}")
"""),
    md("""
Re-sent history is most of the bill: the quadratic term of notebook 1. Now the what-ifs. Each is
priced on the same recorded requests, edited.
"""),
    code("""
counter = counter_for(session.model_info)
changes = [
    Change("cache off", cache="off"),
    Change("cache 1h", cache="1h"),
    Change("system prompt +5,000 tokens", system_tokens=5_000),
    Change("+20 tools of ~300 tokens", add_tools=synthetic_tools(20, 300, counter)),
    Change("model claude-haiku-4-5", model="claude-haiku-4-5"),
]
rows = [("baseline", baseline)] + [(c.label, price_tickets(tickets, c)[0]) for c in changes]
for label, table in rows:
    cost = summary(table)["mean_usd"]
    print(f"{label:<30} ${cost:7.2f}  ({cost / total - 1:+.0%})")

fig, ax = plt.subplots(figsize=(10, 4))
bottom = np.zeros(len(rows))
for part in ("prefix", "history", "new_input", "output"):
    values = np.array([breakdown(table)[f"{part}_usd"] for _, table in rows])
    ax.bar(range(len(rows)), values, bottom=bottom, label=part.replace("_", " "))
    bottom += values
ax.set_xticks(range(len(rows)), [label for label, _ in rows], rotation=15, fontsize=8)
ax.set(ylabel="USD per ticket", title="Where the money goes, per what-if")
ax.legend()
plt.show()
"""),
    md("""
## From one recording to a workload

`fit_profile` measures what a profile is made of (user turns, calls per turn, sizes of user
messages, tool results and outputs, gaps between calls, the fixed prefix) and returns a profile
with the same first two moments. The example carries no recorded usage, so nothing shows which
cache the harness used: the fitted profile says `cache = "off"`; we set the 5-minute cache the
replay assumed. The Monte Carlo then draws 5,000 tickets (seeded: the what-ifs draw the same
tickets), and the closed form gives the exact expectation without cache and with an always-warm
cache.
"""),
    code("""
profile = with_cache(fit_profile(tickets), "5m")
print(dump_profile(profile))
report = estimate_from_profile(profile, WhatIfs(cache="1h", system_tokens=5_000), tickets=5_000)
data = report.to_json()
print(f"Monte Carlo: mean ${data['mean_usd']:.2f}, p50 ${data['p50_usd']:.2f}, "
      f"p90 ${data['p90_usd']:.2f} per ticket")
closed = data["closed_form"]
print(f"closed form: ${closed['no_cache_usd']:.2f} without cache, "
      f"${closed['warm_cache_usd']:.2f} with an always-warm cache")
for row in data["what_if"]:
    print(f"what-if {row['change']}: ${row['mean_usd']:.2f} ({row['delta_pct']:+.0f}%)")
"""),
    code("""
series = [("baseline (5m)", report.baseline), *((w.change, w.table) for w in report.what_ifs)]
top = max(float(np.percentile(t.cost, 99)) for _, t in series)
bins = np.linspace(0, top, 40)
fig, ax = plt.subplots(figsize=(8, 4))
for label, table in series:
    ax.hist(table.cost, bins=bins, histtype="step", linewidth=1.5, label=label)
ax.set(xlabel="USD per ticket", ylabel="tickets", title="Cost per ticket, 5,000 drawn tickets")
ax.legend()
plt.show()
"""),
    md("""
The same numbers from the command line: `contextkit cost PATH...` on recorded sessions, or
`contextkit cost --profile profile.toml` (with `--cache`, `--model`, `--system-tokens`,
`--add-tools`, `--strategy` as what-ifs).
"""),
]


FLEET: list[Cell] = [
    md("""
# 4. A fleet of sessions in DuckDB

`contextkit compare DIR --out results.parquet` (and `cost`, `inspect --cache`) stream one row per
session and strategy to Parquet, so questions over a whole history are SQL. This notebook writes a
synthetic fleet of Claude Code sessions (sizes drawn from fits to the recorded corpus, seeded),
runs the same work the command line runs, and asks three questions with DuckDB: cost per day and
model, the top causes of cache writes, and the best strategy per project. Offline, in seconds.
See `docs/fleet.md` for every column.
"""),
    code("""
import tempfile
from pathlib import Path

import duckdb
import matplotlib.pyplot as plt

from contextkit.fleet import FleetConfig, run_fleet
from contextkit.fleet.synthetic import write_fleet

work = Path(tempfile.mkdtemp(prefix="contextkit-fleet-"))
write_fleet(work / "projects", 20, seed=11, max_calls=30)
config = FleetConfig(
    specs=("as-recorded", "evict-tool-results", "sliding-window"), doctor=True, per_call=True
)
summary = run_fleet([work / "projects"], config, work / "results.parquet", engine="serial")
print(f"{summary.files} files, {summary.computed} session x strategy rows computed")
db = duckdb.connect()
db.execute(f"CREATE VIEW results AS SELECT * FROM '{work / 'results.parquet'}'")
db.execute(f"CREATE VIEW calls AS SELECT * FROM '{work / 'results.calls.parquet'}'")
"""),
    md("""
## Cost per day and model

The recorded bill (`strategy = 'as-recorded'`), summed per day the session started.
"""),
    code("""
per_day = db.sql('''
    SELECT day, model, count(*) AS sessions, round(sum(cost_usd), 2) AS usd
    FROM results WHERE status = 'ok' AND strategy = 'as-recorded'
    GROUP BY ALL ORDER BY day, model
''')
per_day.limit(8).show()
rows = per_day.fetchall()
days = sorted({r[0] for r in rows})
fig, ax = plt.subplots(figsize=(9, 3))
bottom = [0.0] * len(days)
for model in sorted({r[1] for r in rows}):
    usd = [sum(r[3] for r in rows if r[0] == d and r[1] == model) for d in days]
    ax.bar([d.isoformat()[5:] for d in days], usd, bottom=bottom, label=model)
    bottom = [b + u for b, u in zip(bottom, usd)]
ax.set_title("recorded cost per day (USD)")
ax.tick_params(axis="x", labelrotation=90)
ax.legend()
plt.tight_layout()
plt.show()
"""),
    md("""
## Top causes of cache writes

The cache doctor names a cause for every token the recordings wrote to the cache (`cache_causes`,
a list per session); `new content` is the history growing, the rest is rewriting. The per-call
table names the cause of most of each call's writes (`miss_cause`).
"""),
    code("""
db.sql('''
    SELECT c.cause, sum(c.calls) AS calls, sum(c.tokens) AS tokens, round(sum(c.usd), 2) AS usd
    FROM (SELECT unnest(cache_causes) AS c FROM results WHERE status = 'ok')
    GROUP BY ALL ORDER BY usd DESC
''').show()
db.sql('''
    SELECT miss_cause, count(*) AS calls, sum(miss_tokens) AS tokens FROM calls
    WHERE miss_cause IS NOT NULL GROUP BY ALL ORDER BY tokens DESC
''').show()
"""),
    md("""
## Best strategy per project

The cheapest strategy that kept recall at 0.9 or more with no call over the window, its saving
against the recorded bill, and a 95% interval on that saving (sessions as independent draws).
"""),
    code("""
db.sql('''
    WITH base AS (
        SELECT file, session_index, cost_usd AS recorded FROM results
        WHERE status = 'ok' AND strategy = 'as-recorded'),
    per AS (
        SELECT project, strategy, count(*) AS n, sum(cost_usd) AS usd, avg(recall) AS recall,
               sum(overflow_calls) AS overflows, sum(recorded - cost_usd) AS saved,
               1.96 * stddev_samp(recorded - cost_usd) * sqrt(count(*)) AS ci95
        FROM results JOIN base USING (file, session_index)
        WHERE status = 'ok' AND strategy <> 'as-recorded' GROUP BY ALL)
    SELECT project, arg_min(strategy, usd) AS best, round(min(usd), 2) AS usd,
           round(arg_min(saved, usd), 2) AS saved_usd, round(arg_min(ci95, usd), 2) AS ci95_usd
    FROM per WHERE recall >= 0.9 AND overflows = 0 GROUP BY project ORDER BY project
''').show()
"""),
    md("""
The same from the command line: `contextkit compare DIR --out results.parquet --per-call`
(`--engine ray` on a Ray cluster, `--resume` after an interruption), then DuckDB on the file.
"""),
]


NOTEBOOKS = {
    "01-array-is-the-state.ipynb": ARRAY_IS_THE_STATE,
    "02-strategies-compared.ipynb": STRATEGIES_COMPARED,
    "03-cost-per-ticket.ipynb": COST_PER_TICKET,
    "04-fleet-in-duckdb.ipynb": FLEET,
}


def build(cells: list[Cell]) -> Any:
    """The notebook (an ``nbformat.NotebookNode``) of ``cells``, with stable cell ids."""
    v4 = nbformat.v4
    made = [v4.new_markdown_cell(s) if kind == "md" else v4.new_code_cell(s) for kind, s in cells]
    nb = v4.new_notebook(cells=made)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python"}
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:02d}"  # stable ids: rebuilding gives the same file
    return nb


def main() -> None:
    for name, cells in NOTEBOOKS.items():
        nb = build(cells)
        nbformat.validate(nb)
        nbformat.write(nb, HERE / name)


if __name__ == "__main__":
    main()
