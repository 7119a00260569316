package runnel.nexmark.streams;

import java.time.Duration;

/** Settings the queries share, as Runnel's {@code queries.rs} (the reference's defaults). */
final class Nexmark {

    /** The size of the windows (the reference's {@code windowSizeSec}). */
    static final Duration WINDOW_SIZE = Duration.ofSeconds(10);

    /** How often q5's sliding windows start (the reference's {@code windowPeriodSec}). */
    static final Duration WINDOW_PERIOD = Duration.ofSeconds(5);

    /**
     * The default grace of the windows. Runnel's watermarks run 1 s behind the newest event,
     * but the input of every windowed aggregation here has come through a repartition topic,
     * where the records of the upstream tasks interleave in the batches a stream thread
     * processes them in: up to about 7 s out of order with one thread over an in-order backlog.
     * Stream threads that run apart put no bound on it; the dropped records are logged.
     */
    static final Duration GRACE = Duration.ofSeconds(10);

    private Nexmark() {}
}
