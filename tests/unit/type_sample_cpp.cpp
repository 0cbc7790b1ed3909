// The C++ sample of test_type_index: a class hierarchy with virtual
// methods in a namespace, a nested class defined out of line, a template,
// and libstdc++ members. Built with -g. Run with --layout it prints the
// sizes and offsets the test compares with the index (offsetof is not
// meant for non-standard-layout classes, so the numbers come from here).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace demo {

struct Base {
	virtual ~Base() {}
	virtual int kind() const { return 0; }
	long id = 0;
	Base *parent = nullptr;
	static int count; // a static data member
};

int Base::count = 3;

struct Derived : Base {
	int kind() const override { return 1; }
	std::vector<int> values;
	std::string label;
	Derived *next = nullptr;
	struct Inner; // defined below, outside the class
	Inner *inner = nullptr;
	int &ref;
	Derived(int &r) : ref(r) {}
};

struct Derived::Inner {
	int depth;
	Derived *owner;
};

template <typename T> struct Box {
	T value;
	Box *next;
};

class Plain {
public:
	int a = 0;
	char *b = nullptr;
};

// A second, non-primary base sits after the first.
struct Multi : Plain, Derived {
	int extra = 0;
	Multi(int &r) : Derived(r) {}
};

namespace {
struct Hidden {
	int h;
};
Hidden g_hidden;
} // namespace

int g_int;
Derived g_derived(g_int);
Multi g_multi(g_int);
Box<int> g_box;
Derived::Inner g_inner;

} // namespace demo

// The layout as the compiler sees it, one "name value" per line.
static void print_layout()
{
	using namespace demo;
	const Derived &d = g_derived;
	const char *base = reinterpret_cast<const char *>(&d);
	std::printf("sizeof.Derived %zu\n", sizeof(Derived));
	std::printf("sizeof.Multi %zu\n", sizeof(Multi));
	std::printf("sizeof.Inner %zu\n", sizeof(Derived::Inner));
	std::printf("Derived.parent %td\n",
		    reinterpret_cast<const char *>(&d.parent) - base);
	std::printf("Derived.values %td\n",
		    reinterpret_cast<const char *>(&d.values) - base);
	std::printf("Derived.label %td\n",
		    reinterpret_cast<const char *>(&d.label) - base);
	std::printf("Derived.next %td\n",
		    reinterpret_cast<const char *>(&d.next) - base);
	std::printf("Derived.inner %td\n",
		    reinterpret_cast<const char *>(&d.inner) - base);
	const Multi &m = g_multi;
	// Plain has no vtable: gcc puts the dynamic base Derived first.
	std::printf("Multi.Plain %td\n",
		    reinterpret_cast<const char *>(static_cast<const Plain *>(&m)) -
			    reinterpret_cast<const char *>(&m));
	std::printf("Multi.extra %td\n",
		    reinterpret_cast<const char *>(&m.extra) -
			    reinterpret_cast<const char *>(&m));
}

int main(int argc, char **argv)
{
	if (argc > 1 && std::strcmp(argv[1], "--layout") == 0) {
		print_layout();
		return 0;
	}
	demo::g_derived.values.push_back(demo::Base::count);
	demo::g_box.value = demo::g_hidden.h + demo::g_inner.depth;
	return demo::g_derived.kind() - 1;
}
