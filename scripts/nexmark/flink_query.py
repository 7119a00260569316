"""Runs one Nexmark query on PyFlink (a local mini-cluster, streaming mode) over a JSON-lines
events file, into a blackhole sink, and exits when the bounded input is done.

    python flink_query.py QUERY EVENTS_FILE [PARALLELISM]

The SQL (flink-sql/<query>.sql) is Flink's own Nexmark queries (github.com/nexmark/nexmark,
flink-nexmark-queries) over the `datagen` layout, with q1, q4 and q9 adjusted to the semantics Runnel's queries have
(see docs/nexmark.md): q1 converts with integer arithmetic, q4 and q9 require the reserve
(q4 also a bid before `expires`, as Runnel's q9 does).
"""

import sys
from pathlib import Path

from pyflink.table import EnvironmentSettings, TableEnvironment

PERSON = ("id BIGINT, name STRING, email_address STRING, credit_card STRING, city STRING, "
          "state STRING, date_time BIGINT, extra STRING")
AUCTION = ("id BIGINT, item_name STRING, description STRING, initial_bid BIGINT, "
           "reserve BIGINT, date_time BIGINT, expires BIGINT, seller BIGINT, category BIGINT, "
           "extra STRING")
BID = "auction BIGINT, bidder BIGINT, price BIGINT, date_time BIGINT, extra STRING"

# Each query's sink columns; its SELECT is flink-sql/<query>.sql, which the Java peer on Kafka
# (flink-kafka/) runs too.
SINK_SCHEMAS = {
    "q0": "auction BIGINT, bidder BIGINT, price BIGINT, date_time TIMESTAMP_LTZ(3), extra STRING",
    "q1": "auction BIGINT, bidder BIGINT, price BIGINT, date_time TIMESTAMP_LTZ(3), extra STRING",
    "q2": "auction BIGINT, price BIGINT",
    "q3": "name STRING, city STRING, state STRING, id BIGINT",
    "q4": "category BIGINT, average BIGINT",
    "q5": "auction BIGINT, num BIGINT",
    "q7": "auction BIGINT, price BIGINT, bidder BIGINT, date_time TIMESTAMP_LTZ(3), extra STRING",
    "q8": "id BIGINT, name STRING, starttime TIMESTAMP(3)",
    "q9": "id BIGINT, seller BIGINT, category BIGINT, auction BIGINT, price BIGINT",
    "q11": "bidder BIGINT, bid_count BIGINT, starttime TIMESTAMP(3), endtime TIMESTAMP(3)",
}


def main():
    query, events = sys.argv[1], sys.argv[2]
    parallelism = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    sink_schema = SINK_SCHEMAS[query]
    select = (Path(__file__).parent / "flink-sql" / f"{query}.sql").read_text()
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = env.get_config()
    config.set("parallelism.default", str(parallelism))
    config.set("pipeline.object-reuse", "true")
    env.execute_sql(f"""
        CREATE TABLE datagen (
            event_type INT,
            person ROW<{PERSON}>,
            auction ROW<{AUCTION}>,
            bid ROW<{BID}>,
            event_time AS TO_TIMESTAMP_LTZ(CASE event_type
                WHEN 0 THEN person.date_time
                WHEN 1 THEN auction.date_time
                ELSE bid.date_time END, 3),
            WATERMARK FOR event_time AS event_time - INTERVAL '1' SECOND
        ) WITH ('connector' = 'filesystem', 'path' = '{events}', 'format' = 'json')""")
    env.execute_sql("""CREATE VIEW person AS SELECT person.id, person.name, person.email_address,
        person.credit_card, person.city, person.state, event_time, person.extra
        FROM datagen WHERE event_type = 0""")
    env.execute_sql("""CREATE VIEW auction AS SELECT auction.id, auction.item_name,
        auction.description, auction.initial_bid, auction.reserve, event_time,
        TO_TIMESTAMP_LTZ(auction.expires, 3) AS expiresTime, auction.seller, auction.category,
        auction.extra FROM datagen WHERE event_type = 1""")
    env.execute_sql("""CREATE VIEW bid AS SELECT bid.auction, bid.bidder, bid.price, event_time,
        bid.extra FROM datagen WHERE event_type = 2""")
    env.execute_sql(f"CREATE TABLE sink ({sink_schema}) WITH ('connector' = 'blackhole')")
    env.execute_sql(f"INSERT INTO sink {select}").wait()


if __name__ == "__main__":
    main()
