"""Workflow texts several test packages share."""

from __future__ import annotations

#: A multi-turn agent that remembers by ``memoryId`` and finishes when the model says ``done``;
#: ``BASE`` is replaced by the scripted model server's address.
MEMORY_CHAT = """
id: memory-chat
specVersion: '0.8'
start: chat
states:
  - name: chat
    type: aiagent
    agentName: concierge
    userMessage: '${ .message }'
    llmConfig: {provider: openai, apiKey: sk-test, baseUrl: BASE, overrideParams: {model: gpt-4o-mini}}
    memory: {memoryId: '${ .memoryId }', maxMessages: 20}
    output: {schema: {type: object, properties: {response: {type: string}, done: {type: boolean}}, required: [response]}}
    agentOutcomes:
      - {condition: '${ $agentOutcome.returnValues.done == true }', finish: true}
      - {finish: false}
    end: true
"""
