SELECT auction, bidder, price * 89 / 100, event_time, extra FROM bid
