"""Options that would silently do nothing (issue 36, item 4): an option given on the command line that no
part of the run uses is an error naming it, before any work: FTBC's --alpha for `levels` or `rts`,
calibration options on a sweep without --compare, a Poisson --seed with direct encoding, --variant for
a method whose variant is fixed. Options a method does use still run."""

GROUP = "options used"


def cases(rc):
    calib = lambda method, extra: ["calibrate", "m.snn.h5", "-o", "out.snn.h5", "--method", method,  # noqa: E731
                                   "--T", "4", *extra]
    cs = []
    for method, option, value in (("levels", "--alpha", "0.3"), ("rts", "--batches", "2"), ("levels", "--data",
                                  "d-images-idx3-ubyte"), ("ftbc-exact", "--alpha", "0.3"),
                                  ("ftbc-paper", "--variant", "exact"), ("light", "--alpha", "0.2")):
        cs.append(rc.Case(f"calibrate --method {method} {option} (which it does not use)",
                          calib(method, [option, value]), msg=[option, method, r"no effect"], group=GROUP))
    cs.append(rc.Case("sweep --alpha without --compare", rc.sweep_args(["--alpha", "0.3"]),
                      msg=[r"--alpha", r"without --compare"], group=GROUP))
    cs.append(rc.Case("sweep --calib-seed without --compare", rc.sweep_args(["--calib-seed", "3"]),
                      msg=[r"--calib-seed", r"without --compare"], group=GROUP))
    cs.append(rc.Case("sweep --seed with direct encoding", rc.sweep_args(["--seed", "3"]),
                      msg=[r"--seed", r"direct"], group=GROUP))
    cs.append(rc.Case("sweep --compare none,rts --alpha (neither uses it)",
                      rc.sweep_args(["--compare", "none,rts", "--alpha", "0.3"]),
                      msg=[r"--alpha", r"none, rts", r"no effect"], group=GROUP))
    cs.append(rc.Case("sweep --compare none,ftbc --alpha (ftbc uses it: runs)",
                      rc.sweep_args(["--compare", "none,ftbc", "--alpha", "0.3", "--calib-data", "d-images-idx3-ubyte",
                                     "--batches", "1", "--calib-batch-size", "16"]),
                      expect=0, group=GROUP, timeout=120))
    cs.append(rc.Case("sweep --seed with Poisson encoding (runs)", rc.sweep_args(["--encoding", "poisson", "--seed", "3"]),
                      expect=0, group=GROUP))
    return cs
