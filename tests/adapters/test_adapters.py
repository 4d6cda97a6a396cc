"""The framework adapters against the real frameworks, each with its own test model (no network):
pydantic-ai's ``FunctionModel``, a LangChain fake chat model, the Agents SDK's Responses model
talking HTTP to ``contextkit.testing.fake_openai``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any, ClassVar

import openai
from agents import Agent as AgentsAgent
from agents import (
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    SQLiteSession,
    function_tool,
    set_tracing_disabled,
)
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatResult
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from contextkit.adapters.langchain import CompactContext
from contextkit.adapters.openai_agents import CompactingSession
from contextkit.adapters.pydantic_ai import CompactHistory
from contextkit.strategies import EvictToolResults
from contextkit.testing.fake_anthropic import Reply, tool_loop_replies
from contextkit.testing.fake_openai import FakeOpenAI
from contextkit.tokens import ApproxCounter

CALLS = 8
BUDGET = 6_000
"""Eight tool results of about 2,500 tokens each: the full history is over three times this."""


def _file(path: str) -> str:
    return f"# {path}\n" + "".join(f"{n}: value_{path}_{n} = {n}\n" for n in range(500))


def _strategy() -> EvictToolResults:
    return EvictToolResults(keep_last=1)


# -- pydantic-ai ---------------------------------------------------------------------------------


def test_pydantic_ai_history_processor_evicts_old_tool_returns() -> None:
    seen: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        if len(seen) <= CALLS:
            args = {"path": f"src/f{len(seen)}.py"}
            return ModelResponse(parts=[ToolCallPart("read_file", args, f"call_{len(seen)}")])
        return ModelResponse(parts=[TextPart("done")])

    processor = CompactHistory(_strategy(), budget_tokens=BUDGET, counter=ApproxCounter())
    agent = Agent(
        FunctionModel(model), system_prompt="You fix bugs.", capabilities=[processor.capability()]
    )

    @agent.tool_plain
    def read_file(path: str) -> str:
        return _file(path)

    result = asyncio.run(agent.run("Fix the failing test."))  # run_sync leaves its loop open
    assert result.output == "done"
    assert len(seen) == CALLS + 1
    last = seen[-1]
    returns = [p for m in last for p in m.parts if isinstance(p, ToolReturnPart)]
    calls = {p.tool_call_id for m in last for p in m.parts if isinstance(p, ToolCallPart)}
    assert len(returns) == CALLS
    assert {r.tool_call_id for r in returns} <= calls  # every return keeps its call
    assert [r.tool_name for r in returns] == ["read_file"] * CALLS
    full = [r for r in returns if r.content == _file(f"src/f{CALLS}.py")]
    assert len(full) == 1  # only the last one stayed
    assert all(len(str(r.content)) < 500 for r in returns[:-1])
    assert isinstance(last[0], ModelRequest)
    assert isinstance(last[0].parts[0], SystemPromptPart)
    assert processor.compactor.receipts
    assert seen[0] == [*seen[0]]  # nothing to do on the first call: the history as given


def test_pydantic_ai_processor_returns_the_same_list_when_nothing_applies() -> None:
    processor = CompactHistory(_strategy(), counter=ApproxCounter())
    history: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart("s")]),
        ModelResponse(parts=[TextPart("hi")]),
    ]
    assert processor(history) is history


# -- LangChain -------------------------------------------------------------------------------------


class ScriptedChat(GenericFakeChatModel):
    """LangChain's fake chat model, recording what it is sent, with tools bound as a no-op."""

    seen: ClassVar[list[list[BaseMessage]]] = []

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def test_langchain_middleware_shapes_each_model_call_and_keeps_the_state() -> None:
    script = [
        AIMessage(
            content="",
            tool_calls=[{"name": "read_file", "args": {"path": f"f{i}.py"}, "id": f"call_{i}"}],
        )
        for i in range(CALLS)
    ]
    model = ScriptedChat(messages=iter([*script, AIMessage(content="done")]))
    model.seen.clear()

    def read_file(path: str) -> str:
        """Read a file."""
        return _file(path)

    middleware = CompactContext(_strategy(), budget_tokens=BUDGET, counter=ApproxCounter())
    agent = create_agent(model, [read_file], system_prompt="You fix bugs.", middleware=[middleware])
    state = agent.invoke({"messages": [HumanMessage("Fix the failing test.")]})
    assert state["messages"][-1].content == "done"
    assert len(model.seen) == CALLS + 1
    last = model.seen[-1]
    results = [m for m in last if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in results] == [f"call_{i}" for i in range(CALLS)]
    assert results[-1].content == _file(f"f{CALLS - 1}.py")
    assert all(len(str(m.content)) < 500 for m in results[:-1])
    kept = [m for m in last if isinstance(m, AIMessage)]
    originals = [m for m in state["messages"] if isinstance(m, AIMessage)]
    assert all(any(k is o for o in originals) for k in kept)  # unchanged: the same objects
    full = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert all(m.content == _file(f"f{i}.py") for i, m in enumerate(full))  # the state: intact


# -- OpenAI Agents SDK ---------------------------------------------------------------------------


def test_agents_session_reads_back_compacted_and_stores_everything() -> None:
    set_tracing_disabled(True)

    @function_tool
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return _file(path)

    async def run(base_url: str) -> tuple[CompactingSession, list[Any]]:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0)
        model = OpenAIResponsesModel(model="gpt-5.1", openai_client=client)
        agent = AgentsAgent(
            name="fixer", instructions="You fix bugs.", model=model, tools=[read_file]
        )
        session = CompactingSession(
            SQLiteSession("run-1"), _strategy(), budget_tokens=BUDGET, counter=ApproxCounter()
        )
        config = RunConfig(call_model_input_filter=session.model_input_filter)
        outputs = []
        for turn in ("Fix the failing test.", "And the other one."):
            result = await Runner.run(agent, turn, session=session, run_config=config)
            outputs.append(result.final_output)
        await client.close()
        return session, outputs

    again = [
        Reply.tool_call(f"toolu_1{i:03d}", "read_file", {"path": f"src/g{i}.py"})
        for i in range(CALLS // 2)
    ]
    script = [*tool_loop_replies(CALLS // 2), *again, Reply.text("done")]
    with FakeOpenAI(script, counter=ApproxCounter()) as server:
        session, outputs = asyncio.run(run(server.base_url))
        requests = server.requests
    assert outputs == ["done", "done"]
    assert server.rejections == ()
    assert len(requests) == CALLS + 2
    stored: list[dict[str, Any]] = [dict(i) for i in asyncio.run(session.inner.get_items())]
    view: list[dict[str, Any]] = asyncio.run(session.get_items())
    outputs_stored = [i for i in stored if i.get("type") == "function_call_output"]
    outputs_view = [i for i in view if i.get("type") == "function_call_output"]
    assert len(outputs_stored) == len(outputs_view) == CALLS
    assert all(i["output"].startswith("# src/") for i in outputs_stored)  # the tape: intact
    assert (
        sum(len(i["output"]) for i in outputs_view)
        < sum(len(i["output"]) for i in outputs_stored) / 4
    )
    second_turn: list[dict[str, Any]] = requests[CALLS // 2 + 1].body["input"]
    evicted = [i for i in second_turn if i.get("type") == "function_call_output"]
    assert len(evicted) == CALLS // 2
    assert all(len(i["output"]) < 500 for i in evicted[:-1])
    assert max(r.input_tokens or 0 for r in requests) < BUDGET  # each call, with the filter


# -- without the extra ---------------------------------------------------------------------------

BLOCKER = """
import importlib, importlib.abc, json, sys
class Block(importlib.abc.MetaPathFinder):
    blocked = ""
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == self.blocked:
            raise ImportError(f"No module named {name!r}")
finder = Block()
sys.meta_path.insert(0, finder)
from contextkit.errors import ContextkitError
out = {}
for library, module in json.loads(sys.argv[1]):
    finder.blocked = library
    try:
        importlib.import_module(module)
        out[module] = "imported"
    except ContextkitError as exc:
        out[module] = str(exc)
print(json.dumps(out))
"""
MODULES = {  # module: (the library it needs, its extra)
    "contextkit.engine.openai": ("openai", "openai"),
    "contextkit.adapters.hermes": ("agent", "hermes"),
    "contextkit.adapters.pydantic_ai": ("pydantic_ai", "pydantic-ai"),
    "contextkit.adapters.langchain": ("langchain", "langchain"),
    "contextkit.adapters.openai_agents": ("agents", "openai-agents"),
}


def test_a_missing_library_names_its_extra() -> None:
    pairs = [(library, module) for module, (library, _) in MODULES.items()]
    done = subprocess.run(
        [sys.executable, "-c", BLOCKER, json.dumps(pairs)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    errors = json.loads(done.stdout)
    for module, (_, extra) in MODULES.items():
        assert f"contextkit[{extra}]" in errors[module]
