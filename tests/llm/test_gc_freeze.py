"""litellm's import-time objects are moved out of the cyclic garbage collector on first use
(specs/llm.md §6): at 1,000 concurrent agents, full collections re-walking them cost ~a quarter
of the CPU."""

from __future__ import annotations

import gc

from xflow_runtime.llm import ChatRequest, LLMClient, LLMSettings, node_for_ai_model


async def test_litellm_module_state_is_frozen_after_the_first_call(scripted_model):
    scripted_model.set_script(["hello"])
    result = await LLMClient(LLMSettings(api_base=scripted_model.api_base)).complete(
        node_for_ai_model("gpt-4o"), ChatRequest(messages=[{"role": "user", "content": "hi"}]), {})
    assert result["message"]["content"] == "hello"

    import litellm

    assert gc.get_freeze_count() > 100_000  # litellm alone leaves hundreds of thousands
    tracked = gc.get_objects()  # the permanent generation is not listed
    assert not any(obj is litellm.model_cost for obj in tracked)
    # objects created afterwards are still collected as usual
    cycle: list[object] = []
    cycle.append(cycle)
    assert any(obj is cycle for obj in gc.get_objects())
