package runnel.nexmark.streams;

import java.io.IOException;

import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.BinaryEncoder;

/** A bid by a person on an auction (Runnel's {@code model::Bid}); prices are in cents. */
record Bid(long auction, long bidder, long price, long dateTime, String extra) {

    static final String SCHEMA = """
            {"type": "record", "name": "Bid", "fields": [
              {"name": "auction", "type": "long"},
              {"name": "bidder", "type": "long"},
              {"name": "price", "type": "long"},
              {"name": "date_time", "type": "long"},
              {"name": "extra", "type": "string"}
            ]}""";

    static final AvroSerde<Bid> SERDE = AvroSerde.of(SCHEMA, Bid::read, Bid::write);

    static Bid read(BinaryDecoder in) throws IOException {
        return new Bid(in.readLong(), in.readLong(), in.readLong(), in.readLong(), in.readString());
    }

    static void write(Bid bid, BinaryEncoder out) throws IOException {
        out.writeLong(bid.auction);
        out.writeLong(bid.bidder);
        out.writeLong(bid.price);
        out.writeLong(bid.dateTime);
        out.writeString(bid.extra);
    }

    /** The same bid at another price. */
    Bid withPrice(long newPrice) {
        return new Bid(auction, bidder, newPrice, dateTime, extra);
    }
}
