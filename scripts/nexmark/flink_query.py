"""Runs one Nexmark query on PyFlink (a local mini-cluster, streaming mode) over a JSON-lines
events file, into a blackhole sink, and exits when the bounded input is done.

    python flink_query.py QUERY EVENTS_FILE [PARALLELISM]

The SQL is Flink's own Nexmark queries (github.com/nexmark/nexmark, flink-nexmark-queries)
over the `datagen` layout, with q1, q4 and q9 adjusted to the semantics Runnel's queries have
(see docs/nexmark.md): q1 converts with integer arithmetic, q4 and q9 require the reserve
(q4 also a bid before `expires`, as Runnel's q9 does).
"""

import sys

from pyflink.table import EnvironmentSettings, TableEnvironment

PERSON = ("id BIGINT, name STRING, email_address STRING, credit_card STRING, city STRING, "
          "state STRING, date_time BIGINT, extra STRING")
AUCTION = ("id BIGINT, item_name STRING, description STRING, initial_bid BIGINT, "
           "reserve BIGINT, date_time BIGINT, expires BIGINT, seller BIGINT, category BIGINT, "
           "extra STRING")
BID = "auction BIGINT, bidder BIGINT, price BIGINT, date_time BIGINT, extra STRING"

QUERIES = {
    "q0": ("auction BIGINT, bidder BIGINT, price BIGINT, date_time TIMESTAMP_LTZ(3), extra STRING",
           "SELECT auction, bidder, price, event_time, extra FROM bid"),
    "q1": ("auction BIGINT, bidder BIGINT, price BIGINT, date_time TIMESTAMP_LTZ(3), extra STRING",
           "SELECT auction, bidder, price * 89 / 100, event_time, extra FROM bid"),
    "q2": ("auction BIGINT, price BIGINT",
           "SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0"),
    "q3": ("name STRING, city STRING, state STRING, id BIGINT",
           """SELECT P.name, P.city, P.state, A.id
              FROM auction AS A INNER JOIN person AS P ON A.seller = P.id
              WHERE A.category = 10 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA')"""),
    "q4": ("category BIGINT, average BIGINT",
           """SELECT Q.category, AVG(Q.final)
              FROM (
                SELECT MAX(B.price) AS final, A.category
                FROM auction A, bid B
                WHERE A.id = B.auction AND B.event_time >= A.event_time AND B.event_time < A.expiresTime
                  AND B.price >= A.reserve
                GROUP BY A.id, A.category
              ) Q
              GROUP BY Q.category"""),
    "q5": ("auction BIGINT, num BIGINT",
           """SELECT AuctionBids.auction, AuctionBids.num
              FROM (
                SELECT auction, count(*) AS num, window_start AS starttime, window_end AS endtime
                FROM TABLE(HOP(TABLE bid, DESCRIPTOR(event_time), INTERVAL '5' SECOND, INTERVAL '10' SECOND))
                GROUP BY auction, window_start, window_end
              ) AS AuctionBids
              JOIN (
                SELECT max(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime
                FROM (
                  SELECT count(*) AS num, window_start AS starttime, window_end AS endtime
                  FROM TABLE(HOP(TABLE bid, DESCRIPTOR(event_time), INTERVAL '5' SECOND, INTERVAL '10' SECOND))
                  GROUP BY auction, window_start, window_end
                ) AS CountBids
                GROUP BY CountBids.starttime, CountBids.endtime
              ) AS MaxBids
              ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime
                 AND AuctionBids.num >= MaxBids.maxn"""),
    "q7": ("auction BIGINT, price BIGINT, bidder BIGINT, date_time TIMESTAMP_LTZ(3), extra STRING",
           """SELECT B.auction, B.price, B.bidder, B.event_time, B.extra
              FROM bid B
              JOIN (
                SELECT MAX(price) AS maxprice, window_end AS event_time
                FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(event_time), INTERVAL '10' SECOND))
                GROUP BY window_start, window_end
              ) B1
              ON B.price = B1.maxprice
              WHERE B.event_time BETWEEN B1.event_time - INTERVAL '10' SECOND AND B1.event_time"""),
    "q8": ("id BIGINT, name STRING, starttime TIMESTAMP(3)",
           """SELECT P.id, P.name, P.starttime
              FROM (
                SELECT id, name, window_start AS starttime, window_end AS endtime
                FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(event_time), INTERVAL '10' SECOND))
                GROUP BY id, name, window_start, window_end
              ) P
              JOIN (
                SELECT seller, window_start AS starttime, window_end AS endtime
                FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(event_time), INTERVAL '10' SECOND))
                GROUP BY seller, window_start, window_end
              ) A
              ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime"""),
    "q9": ("id BIGINT, seller BIGINT, category BIGINT, auction BIGINT, price BIGINT",
           """SELECT id, seller, category, auction, price
              FROM (
                SELECT A.id, A.seller, A.category, B.auction, B.price,
                  ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.event_time ASC) AS rownum
                FROM auction A, bid B
                WHERE A.id = B.auction AND B.event_time BETWEEN A.event_time AND A.expiresTime
                  AND B.price >= A.reserve
              )
              WHERE rownum <= 1"""),
    "q11": ("bidder BIGINT, bid_count BIGINT, starttime TIMESTAMP(3), endtime TIMESTAMP(3)",
            """SELECT B.bidder, count(*) AS bid_count,
                 SESSION_START(B.event_time, INTERVAL '10' SECOND),
                 SESSION_END(B.event_time, INTERVAL '10' SECOND)
               FROM bid B
               GROUP BY B.bidder, SESSION(B.event_time, INTERVAL '10' SECOND)"""),
}


def main():
    query, events = sys.argv[1], sys.argv[2]
    parallelism = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    sink_schema, select = QUERIES[query]
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
