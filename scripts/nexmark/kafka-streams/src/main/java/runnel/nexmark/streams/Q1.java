package runnel.nexmark.streams;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;

/** Query 1, currency conversion: every bid with its price from dollars to euros. */
final class Q1 {

    private Q1() {}

    /** The price in euro cents of a price in dollar cents, in integer arithmetic as Runnel's. */
    static long dollarsToEuros(long price) {
        return price * 89 / 100;
    }

    static void build(StreamsBuilder builder, Topics topics) {
        topics.bids(builder)
                .mapValues(bid -> bid.withPrice(dollarsToEuros(bid.price())), Named.as("q1-euros"))
                .to(topics.output(), Produced.with(Serdes.ByteArray(), Bid.SERDE).withName("q1-out"));
    }
}
