SELECT id, seller, category, auction, price
FROM (
  SELECT A.id, A.seller, A.category, B.auction, B.price,
    ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.event_time ASC) AS rownum
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.event_time BETWEEN A.event_time AND A.expiresTime
    AND B.price >= A.reserve
)
WHERE rownum <= 1
