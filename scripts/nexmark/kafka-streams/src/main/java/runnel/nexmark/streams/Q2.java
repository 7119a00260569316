package runnel.nexmark.streams;

import java.io.IOException;

import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.BinaryEncoder;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;

/** Query 2, selection: the auction and price of the bids on every 123rd auction. */
final class Q2 {

    /** Bids on auctions whose id is a multiple of this are selected. */
    static final long AUCTION_SKIP = 123;

    /** A selected bid: the auction and the price. */
    record AuctionPrice(long auction, long price) {

        static final AvroSerde<AuctionPrice> SERDE = AvroSerde.of("""
                {"type": "record", "name": "AuctionPrice", "fields": [
                  {"name": "auction", "type": "long"},
                  {"name": "price", "type": "long"}
                ]}""", AuctionPrice::read, AuctionPrice::write);

        static AuctionPrice read(BinaryDecoder in) throws IOException {
            return new AuctionPrice(in.readLong(), in.readLong());
        }

        static void write(AuctionPrice value, BinaryEncoder out) throws IOException {
            out.writeLong(value.auction);
            out.writeLong(value.price);
        }
    }

    private Q2() {}

    static void build(StreamsBuilder builder, Topics topics) {
        topics.bids(builder)
                .filter((key, bid) -> bid.auction() % AUCTION_SKIP == 0, Named.as("q2-every-123rd-auction"))
                .mapValues(bid -> new AuctionPrice(bid.auction(), bid.price()), Named.as("q2-auction-price"))
                .to(topics.output(), Produced.with(Serdes.ByteArray(), AuctionPrice.SERDE).withName("q2-out"));
    }
}
