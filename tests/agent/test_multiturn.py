"""finish: false keeps the conversation going: the instance waits for the next user message."""

from __future__ import annotations

from tests.agent.support import Conversation

CHAT = """
start: chat
states:
  - name: chat
    type: aiagent
    agentName: concierge
    systemMessage: "You are the concierge. Guest: {{ guest }}."
    userMessage: '${ .first }'
    output: {schema: {type: object, properties: {response: {type: string}, done: {type: boolean}}, required: [response]}}
    agentOutcomes:
      - condition: '${ $agentOutcome.returnValues.done == true }'
        finish: true
        dataFilter: {data: '${ {farewell: .returnValues.response} }'}
      - dataFilter: {data: '${ {last_reply: .returnValues.response} }'}
    end: true
"""


async def test_three_user_messages_continue_one_conversation(scripted_model):
    scripted_model.set_script([
        {"json": {"response": "Welcome! How can I help?"}},
        {"json": {"response": "A table for two at 8pm is booked."}},
        {"json": {"response": "Your taxi is ordered."}},
        {"json": {"response": "Goodbye!", "done": True}},
    ])
    chat = Conversation(CHAT, scripted_model, {"guest": "Ann", "first": "Hello"})
    assert (await chat.reply())["reply"] == "Welcome! How can I help?"
    for text, expected in (("Book dinner", "A table for two at 8pm is booked."),
                           ({"text": "And a taxi"}, "Your taxi is ordered.")):
        chat.send(text)
        reply = await chat.reply()
        assert reply["reply"] == expected
    chat.send("Thanks, bye")
    result = await chat.result()
    assert result.status == "completed", result.error
    assert result.output == {"guest": "Ann", "first": "Hello", "last_reply": "Your taxi is ordered.",
                             "farewell": "Goodbye!"}
    last = scripted_model.chat_requests[-1].messages
    assert last == [
        {"role": "system", "content": "You are the concierge. Guest: Ann."},
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": '{"response": "Welcome! How can I help?"}'},
        {"role": "user", "content": "Book dinner"},
        {"role": "assistant", "content": '{"response": "A table for two at 8pm is booked."}'},
        {"role": "user", "content": "And a taxi"},
        {"role": "assistant", "content": '{"response": "Your taxi is ordered."}'},
        {"role": "user", "content": "Thanks, bye"},
    ]
    replies = chat.records.of("agent_reply")
    assert [r["turn"] for r in replies] == [1, 2, 3]
    assert len(chat.records.of("llm_call")) == 4


async def test_tool_budget_is_per_turn_and_history_keeps_tool_exchanges(scripted_model):
    scripted_model.set_script([
        {"tool_calls": [{"name": "clock", "arguments": {}}]},
        "It is noon.",
        {"tool_calls": [{"name": "clock", "arguments": {}}]},
        "Still noon.",
    ])
    chat = Conversation("""
start: chat
functions: [{name: clock, type: custom, operation: "python:x:y"}]
states:
  - name: chat
    type: aiagent
    agentName: timekeeper
    userMessage: What time is it?
    maxToolExecutions: 1
    tools: [{name: clock}]
    agentOutcomes:
      - {condition: '${ $agentOutcome.returnValues.response | startswith("Still") }', finish: true}
      - {finish: false}
    end: true
""", scripted_model, functions={"clock": lambda _: {"time": "12:00"}})
    assert (await chat.reply())["reply"] == "It is noon."
    chat.send("And now?")
    result = await chat.result()
    assert result.status == "completed", result.error
    requests = scripted_model.chat_requests
    assert [r.body.get("tool_choice") for r in requests] == ["auto", "none", "auto", "none"]  # budget renews per turn
    assert [m["role"] for m in requests[2].messages] == ["system", "user", "assistant", "tool", "assistant", "user"]


async def test_a_second_agent_state_continues_the_instance_conversation(scripted_model):
    scripted_model.set_script(["First answer.", "Second answer."])
    chat = Conversation("""
start: one
states:
  - {name: one, type: aiagent, agentName: a, userMessage: first question, agentOutcomes: [{finish: true}], transition: two}
  - {name: two, type: aiagent, agentName: a, userMessage: second question, agentOutcomes: [{finish: true}], end: true}
""", scripted_model)
    result = await chat.result()
    assert result.status == "completed", result.error
    assert scripted_model.chat_requests[1].messages[1:] == [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "First answer."},
        {"role": "user", "content": "second question"},
    ]


async def test_waiting_for_a_user_message_times_out_with_event_timeout(scripted_model):
    scripted_model.set_script(["Anything else?"])
    chat = Conversation("""
start: chat
states:
  - name: chat
    type: aiagent
    agentName: a
    userMessage: hi
    timeouts: {eventTimeout: PT0.2S}
    agentOutcomes: [{finish: false}]
    end: true
""", scripted_model)
    result = await chat.result()
    assert result.status == "failed" and result.error["code"] == "timeout"
