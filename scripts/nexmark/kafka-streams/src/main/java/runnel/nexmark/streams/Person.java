package runnel.nexmark.streams;

import java.io.IOException;

import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.BinaryEncoder;

/** A new user of the auction site (Runnel's {@code model::Person}); times are ms since the epoch. */
record Person(
        long id,
        String name,
        String emailAddress,
        String creditCard,
        String city,
        String state,
        long dateTime,
        String extra) {

    static final AvroSerde<Person> SERDE = AvroSerde.of("""
            {"type": "record", "name": "Person", "fields": [
              {"name": "id", "type": "long"},
              {"name": "name", "type": "string"},
              {"name": "email_address", "type": "string"},
              {"name": "credit_card", "type": "string"},
              {"name": "city", "type": "string"},
              {"name": "state", "type": "string"},
              {"name": "date_time", "type": "long"},
              {"name": "extra", "type": "string"}
            ]}""", Person::read, Person::write);

    static Person read(BinaryDecoder in) throws IOException {
        return new Person(in.readLong(), in.readString(), in.readString(), in.readString(),
                in.readString(), in.readString(), in.readLong(), in.readString());
    }

    static void write(Person person, BinaryEncoder out) throws IOException {
        out.writeLong(person.id);
        out.writeString(person.name);
        out.writeString(person.emailAddress);
        out.writeString(person.creditCard);
        out.writeString(person.city);
        out.writeString(person.state);
        out.writeLong(person.dateTime);
        out.writeString(person.extra);
    }
}
