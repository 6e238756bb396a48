# The code under test: the total of a cart's item prices.
module Cart
  def self.total(prices)
    prices.max * prices.size
  end

  def self.count(prices)
    prices.size
  end
end
