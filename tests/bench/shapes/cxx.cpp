// cxx.cpp -- a C++-containers heap for the performance benchmark (not a test).
//
//   cxx ITEMS
//
// An inventory service as C++ code keeps one: a catalog
// std::map<std::string, Item> keyed by SKU, each Item owning strings longer
// than the small-string buffer, a std::vector of recent prices, a
// std::shared_ptr to its supplier (shared by many items) and, for some, a
// std::unique_ptr to extra details; a std::unordered_map<uint64_t,
// std::vector<uint64_t>> from each order id to the item ids it holds; and a
// std::vector<std::string> audit log. Orders are placed and retired as the
// catalog fills, so nodes and buffers reuse freed memory. About 2% of the
// items built are created with `new` on an error path and never deleted
// (leaked, with their members). Stops in bench_stop() for the benchmark's
// debugger to core it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

struct Supplier {
	std::string name;
	std::string address;
	uint32_t rating;
};

struct Details {
	std::string description;
	std::vector<std::string> tags;
};

struct Item {
	uint64_t id;
	std::string title;
	std::string category;
	std::vector<double> prices;
	std::shared_ptr<Supplier> supplier;
	std::unique_ptr<Details> details;
	uint32_t stock;
};

struct Inventory {
	std::map<std::string, Item> catalog;
	std::unordered_map<uint64_t, std::vector<uint64_t>> orders;
	std::vector<std::string> audit;
	std::vector<std::shared_ptr<Supplier>> suppliers;
};

static Inventory *inventory;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd()
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static std::string sku_of(uint64_t i)
{
	char buf[64];
	snprintf(buf, sizeof buf, "SKU-%010llu-%04llu-EU",
		 (unsigned long long)(i * 2654435761u % 4294967291u), (unsigned long long)(i % 9973));
	return buf;
}

static Item make_item(Inventory &inv, uint64_t i)
{
	Item it;
	it.id = i;
	char buf[96];
	snprintf(buf, sizeof buf, "Stainless widget, model %llu, size %llu",
		 (unsigned long long)i, (unsigned long long)(i % 13));
	it.title = buf;
	snprintf(buf, sizeof buf, "hardware/fasteners/%llu", (unsigned long long)(i % 211));
	it.category = buf;
	size_t np = 2 + i % 6;
	for (size_t k = 0; k < np; k++)
		it.prices.push_back(9.99 + (double)(rnd() % 1000) / 100.0);
	it.supplier = inv.suppliers[rnd() % inv.suppliers.size()];
	if (i % 4 == 0) {
		it.details = std::make_unique<Details>();
		it.details->description = "A widget that fits most fastening needs; item " +
					  std::to_string(i);
	}
	it.stock = (uint32_t)(rnd() % 500);
	return it;
}

__attribute__((noinline)) static bool accept(const Item *it)
{
	return it->stock > 1000;  // never: stock is below 500
}

// The service's status line, as its admin command prints it. Besides, it
// keeps the global `inventory` a live variable: with main alone using it,
// gcc -O2 drops the global, and no debugger (gdb says "optimized out") can
// tell what the heap's biggest object is.
__attribute__((noinline)) static void print_status()
{
	printf("inventory: %zu items, %zu open orders, %zu log lines\n",
	       inventory->catalog.size(), inventory->orders.size(),
	       inventory->audit.size());
}

__attribute__((noinline)) void bench_stop(size_t used, size_t leaked)
{
	printf("ready %zu used, %zu leaked\n", used, leaked);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], nullptr, 10) : 1650000;
	inventory = new Inventory;
	Inventory &inv = *inventory;
	for (int s = 0; s < 500; s++) {
		auto sp = std::make_shared<Supplier>();
		sp->name = "Supplier number " + std::to_string(s) + " of the region";
		sp->address = std::to_string(s) + " Industrial Park Road, Unit " + std::to_string(s % 17);
		sp->rating = (uint32_t)(s % 5);
		inv.suppliers.push_back(sp);
	}
	uint64_t order_id = 1;
	size_t leaked = 0;
	for (size_t i = 0; i < n; i++) {
		inv.catalog.emplace(sku_of(i), make_item(inv, i));
		// an order with a few items now and then; old orders retired
		if (i % 2 == 0) {
			std::vector<uint64_t> &lines = inv.orders[order_id++];
			size_t nl = 1 + rnd() % 7;
			for (size_t k = 0; k < nl; k++)
				lines.push_back(rnd() % (i + 1));
		}
		if (i % 6 == 0 && order_id > 1000)
			inv.orders.erase(order_id - 1000 + rnd() % 500);
		if (i % 3 == 0)
			inv.audit.push_back("added item " + std::to_string(i) + " to the catalog by import job");
		if (i % 50 == 0) {
			// a draft item checked and, when rejected, forgotten: the
			// error path never deletes it
			Item *draft = new Item(make_item(inv, n + i));
			if (!accept(draft))
				leaked += 4 + (draft->details ? 2 : 0);
		}
	}
	// used blocks: each item's map node, key, title, category and prices,
	// its details and their description; each order's node and lines; the
	// log's strings; the containers' arrays; the suppliers; the leaked
	size_t used = inv.catalog.size() * 5 + inv.orders.size() * 2 + inv.audit.size() + leaked;
	for (auto &kv : inv.catalog)
		used += kv.second.details ? 2 : 0;
	used += 1 + 1 + 1 + 1 + inv.suppliers.size() * 3;
	print_status();
	bench_stop(used, leaked);
	return 0;
}
