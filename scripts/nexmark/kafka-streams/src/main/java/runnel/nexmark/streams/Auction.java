package runnel.nexmark.streams;

import java.io.IOException;

import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.BinaryEncoder;

/** An item put up for auction by a seller (Runnel's {@code model::Auction}). */
record Auction(
        long id,
        String itemName,
        String description,
        long initialBid,
        long reserve,
        long dateTime,
        long expires,
        long seller,
        long category,
        String extra) {

    static final AvroSerde<Auction> SERDE = AvroSerde.of("""
            {"type": "record", "name": "Auction", "fields": [
              {"name": "id", "type": "long"},
              {"name": "item_name", "type": "string"},
              {"name": "description", "type": "string"},
              {"name": "initial_bid", "type": "long"},
              {"name": "reserve", "type": "long"},
              {"name": "date_time", "type": "long"},
              {"name": "expires", "type": "long"},
              {"name": "seller", "type": "long"},
              {"name": "category", "type": "long"},
              {"name": "extra", "type": "string"}
            ]}""", Auction::read, Auction::write);

    static Auction read(BinaryDecoder in) throws IOException {
        return new Auction(in.readLong(), in.readString(), in.readString(), in.readLong(),
                in.readLong(), in.readLong(), in.readLong(), in.readLong(), in.readLong(),
                in.readString());
    }

    static void write(Auction auction, BinaryEncoder out) throws IOException {
        out.writeLong(auction.id);
        out.writeString(auction.itemName);
        out.writeString(auction.description);
        out.writeLong(auction.initialBid);
        out.writeLong(auction.reserve);
        out.writeLong(auction.dateTime);
        out.writeLong(auction.expires);
        out.writeLong(auction.seller);
        out.writeLong(auction.category);
        out.writeString(auction.extra);
    }
}
