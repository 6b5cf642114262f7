"""Reusable pieces for integration tests against real stores and a real ADK Runner.

* `scripted_model`: `Script` (the responses to give, the requests received,
  each checked against Anthropic's pairing rule), `ScriptedClaude` /
  `ScriptedGemini` (ADK keeps / strips ``adk-`` call ids for them), response
  builders (`calls`, `call`, `text`, `function_responses`, `user_text`) and
  `AnthropicPairingRejected` raised in ``Script(strict=True)`` mode.
* `backends`: `open_backend(spec)` for the six stores (`BACKEND_KINDS`) and
  MariaDB (`MARIADB_KIND`), the raw store dump and `assert_nothing_synthetic_stored`.
* `scenario`: `Harness` (agent + scripted model + Runner over a store, wrapped
  or not), `Toolbox` (tools with run counters, a blocking ``hang``), interrupted
  turns, `normalized_history` for comparing stored histories.
* `probes`: `ViewConsistencyProbe`, a plugin comparing the runner's view with a
  fresh ``get_session`` at every callback.
* `neighbours`: ADK's plugins and an agent callback window beside `PairingPlugin`
  over four interrupted histories (`run_case`, `assert_the_guarantee`).
* `request_bytes`: a turn's first request as ADK's Anthropic converter sends
  it, in this process or a fresh one (``python -m``).

Typical use (``backend`` is the fixture in ``tests/integration/conftest.py``)::

    harness = Harness.build(backend, wrapped=True, steps=[calls(call("hang", id="c1")), text("ok")])
    session_id = await harness.new_session()
    await harness.interrupted_turn(session_id, "do it")
    await harness.turn(session_id, "hello?")
    assert_every_request_valid(harness.script)
"""
