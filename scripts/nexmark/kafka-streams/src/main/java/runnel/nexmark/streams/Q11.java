package runnel.nexmark.streams;

import java.io.IOException;
import java.time.Duration;

import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.BinaryEncoder;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.Suppressed.BufferConfig;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.state.SessionStore;

/**
 * Query 11, user sessions: how many bids each bidder placed per session, a session ending
 * after 10 s without a bid.
 */
final class Q11 {

    /** Counts only need a non-null value: the bid itself is not repartitioned. */
    private static final byte[] NOTHING = new byte[0];

    /**
     * Runnel (as Beam and Flink) starts a new session when a bid comes 10 s or more after the
     * previous one; Kafka Streams merges records up to and including the gap apart. One
     * millisecond less makes the two agree.
     */
    static final Duration GAP = Nexmark.WINDOW_SIZE.minusMillis(1);

    /** One bidder's session (Runnel's {@code Pane<i64, i64>}: key, window and count). */
    record BidderSession(long bidder, long windowStart, long windowEnd, long bids) {

        static final AvroSerde<BidderSession> SERDE = AvroSerde.of("""
                {"type": "record", "name": "BidderSession", "fields": [
                  {"name": "bidder", "type": "long"},
                  {"name": "window_start", "type": "long"},
                  {"name": "window_end", "type": "long"},
                  {"name": "bids", "type": "long"}
                ]}""", BidderSession::read, BidderSession::write);

        static BidderSession read(BinaryDecoder in) throws IOException {
            return new BidderSession(in.readLong(), in.readLong(), in.readLong(), in.readLong());
        }

        static void write(BidderSession value, BinaryEncoder out) throws IOException {
            out.writeLong(value.bidder);
            out.writeLong(value.windowStart);
            out.writeLong(value.windowEnd);
            out.writeLong(value.bids);
        }
    }

    private Q11() {}

    static void build(StreamsBuilder builder, Topics topics, Duration grace) {
        long windowSize = Nexmark.WINDOW_SIZE.toMillis();
        topics.bids(builder)
                .map((key, bid) -> KeyValue.pair(bid.bidder(), NOTHING), Named.as("q11-bidder"))
                .groupByKey(Grouped.with("q11-by-bidder", Serdes.Long(), Serdes.ByteArray()))
                .windowedBy(SessionWindows.ofInactivityGapAndGrace(GAP, grace))
                .count(Named.as("q11-count"), Materialized.<Long, Long, SessionStore<Bytes, byte[]>>as("q11-sessions")
                        .withKeySerde(Serdes.Long())
                        .withValueSerde(Serdes.Long()))
                .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()).withName("q11-final"))
                .toStream(Named.as("q11-closed"))
                // Keyed by the bidder as text, as Runnel's; a session's end is its last bid + 10 s
                // there, its last bid here.
                .map((session, bids) -> KeyValue.pair(
                                String.valueOf(session.key()),
                                new BidderSession(session.key(), session.window().start(),
                                        session.window().end() + windowSize, bids)),
                        Named.as("q11-result"))
                .to(topics.output(), Produced.with(Serdes.String(), BidderSession.SERDE).withName("q11-out"));
    }
}
