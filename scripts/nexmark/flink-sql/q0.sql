SELECT auction, bidder, price, event_time, extra FROM bid
