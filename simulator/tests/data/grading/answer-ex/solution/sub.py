def answer():
    # BEGIN SOLUTION
    # CANARY-KSTEP-SOLUTION-answer-ex
    return 42
    # END SOLUTION
