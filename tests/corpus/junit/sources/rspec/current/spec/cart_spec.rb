# Two one-liners in one context whose generated descriptions coincide ("is expected to eq 6"):
# the prices come from each example's metadata.
require_relative "../lib/cart"

RSpec.describe Cart do
  describe ".total" do
    subject { Cart.total(RSpec.current_example.metadata[:prices]) }

    it(nil, prices: [1, 2, 3]) { is_expected.to eq(6) }
    it(nil, prices: [2, 2, 2]) { is_expected.to eq(6) }
  end

  describe ".count" do
    subject { Cart.count([1, 2, 3]) }

    it { is_expected.to eq(3) }
  end
end
