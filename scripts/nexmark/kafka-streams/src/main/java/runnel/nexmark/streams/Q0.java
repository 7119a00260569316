package runnel.nexmark.streams;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Query 0, passthrough: every bid, unchanged. Measures reading, decoding, encoding and
 * writing a record; the bid is decoded and encoded again rather than copied as bytes.
 */
final class Q0 {

    private Q0() {}

    static void build(StreamsBuilder builder, Topics topics) {
        topics.bids(builder)
                .to(topics.output(), Produced.with(Serdes.ByteArray(), Bid.SERDE).withName("q0-out"));
    }
}
