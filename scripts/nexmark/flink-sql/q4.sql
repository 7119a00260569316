SELECT Q.category, AVG(Q.final)
FROM (
  SELECT MAX(B.price) AS final, A.category
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.event_time >= A.event_time AND B.event_time < A.expiresTime
    AND B.price >= A.reserve
  GROUP BY A.id, A.category
) Q
GROUP BY Q.category
