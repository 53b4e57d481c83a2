"""Request recording: the proxy between EvalScope and the server (``proxy``, its one upstream connection
``upstream``), the process that writes every attempt and response (``recorder``, ``responses``), and how a
thinking model's reasoning is told from its answer (``reasoning``)."""
