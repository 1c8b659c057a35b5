from cascade_worker.outcome import EXIT_LINE, OutputMarkers, classify


def markers(*lines: str) -> OutputMarkers:
    found = OutputMarkers()
    for line in lines:
        found.feed(line)
    return found


def test_exit_zero_with_exit_line_succeeds():
    outcome = classify(0, markers("GPGPU-Sim: *** simulation thread exiting ***", EXIT_LINE))
    assert (outcome.state, outcome.error) == ("succeeded", None)


def test_exit_zero_without_exit_line_fails():
    assert classify(0, markers("launching kernel name: k uid: 1")).error == "exited 0 without the exit line"


def test_unsupported_binary_version_exits_zero_but_fails():
    outcome = classify(0, markers("unsupported binary version: 95"))
    assert (outcome.state, outcome.error) == ("failed", "unsupported binary version 95")


def test_exit_line_alone_is_not_enough_with_a_bad_status():
    assert classify(1, markers(EXIT_LINE)).state == "failed"


def test_deadlock_wins_over_the_abort_it_causes():
    outcome = classify(
        -6,
        markers(
            "GPGPU-Sim uArch: ERROR ** deadlock detected: last writeback core 0 @ gpu_sim_cycle 1 (+ gpu_tot_sim_cycle 2) (50000 cycles ago)",
        ),
    )
    assert outcome.error == "deadlock detected"


def test_assertion_names_the_expression():
    outcome = classify(
        134,
        markers(
            "accel-sim.out: trace_parser.cc:123: void f(): Assertion `reg_dsts_num <= MAX_DST' failed.",
        ),
    )
    assert outcome.error == "assertion failed: reg_dsts_num <= MAX_DST"


def test_undefined_instruction():
    outcome = classify(-6, markers("ERROR:  undefined instruction : HMMA.884 Opcode: HMMA"))
    assert outcome.error == "undefined instruction HMMA.884"


def test_signals_by_name():
    assert classify(-9, OutputMarkers()).error == "killed by SIGKILL"
    assert classify(-11, OutputMarkers()).error == "killed by SIGSEGV"
    assert classify(-6, OutputMarkers()).error == "killed by SIGABRT"
    assert classify(137, OutputMarkers()).error == "killed by SIGKILL"


def test_plain_nonzero_status():
    assert (
        classify(1, markers("GPGPU-Sim uArch: performance model initialization complete.")).error
        == "exited with status 1"
    )


def test_an_error_line_before_the_first_kernel_is_the_reason():
    # Issue 18: the simulator's own first error line, not just the status.
    assert (
        classify(1, markers("GPGPU-Sim ** ERROR: Cannot open config file 'x'")).error
        == "GPGPU-Sim ** ERROR: Cannot open config file 'x' (exit status 1)"
    )


def test_long_reasons_are_cut():
    outcome = classify(-6, markers("x: y: Assertion `" + "a" * 500 + "' failed."))
    assert len(outcome.error) <= 200 and outcome.error.endswith("...")
