/* Several functions, prototypes, globals, macros and main: the shape of real C files. */
#include <stdio.h>
#include <string.h>

#define SQUARE(v) ((v) * (v))
#define ADD_TMP(v) ((v) + tmp)
#define N 5

struct node { int value; struct node *next; };
struct flags { unsigned a : 3; unsigned b : 5; };
enum color { RED = 1, GREEN = 2, BLUE = 4 };

static int counter = 7;
static int table[4] = {3, 1, 4, 1};

static int helper(int n);
int apply(int (*fn)(int), int x);

static int helper(int n) {
    if (n <= 1) return 1;
    return n * helper(n - 1);
}

int apply(int (*fn)(int), int x) { return fn(x) + counter; }

int old_style(a, b)
    int a;
    int b;
{
    return a * 10 + b;
}

int sum_list(struct node *node) {
    int total = 0;
    while (node) { total += node->value; node = node->next; }
    return total;
}

int dangling(int a, int b) {
    int r = 0;
    if (a) r = 1; else if (b) r = 2; else r = 3;
    if (a > b) { r += 10; } else { r -= 10; }
    return r;
}

int loops(int n) {
    int s = 0, i, j;
    for (i = 0; i < n; i++) {
        switch (i % 3) {
        case 0: continue;
        case 1: s += i; break;
        default: s -= 1;
        }
        s *= 2;
    }
    for (i = 0, j = n; i < j; i++, j--) s += i * j;
    for (int k = 0; k < 3; k++) { int k2 = k * 2; s += k2; }
    i = 0;
    while (i < n) { i++; if (i == 2) continue; s ^= i; }
    do { s += 3; } while (s < 10);
    return s;
}

unsigned int arith(unsigned int x, int y, int z) {
    int tmp = 2;
    unsigned int u = 4000000000u;
    float f = 1.5f;
    double d = 2.0;
    char c = 'a';
    long big = 3000000000L;
    x *= y + z;
    x -= 1;
    y <<= 2;
    z %= 7;
    c += 1;
    f *= 2;
    d /= 4;
    y++;
    --z;
    printf("%u %d %d %c %.2f %.3f %ld %u %d\n", x, y, z, c, f, d, big, u / 7u, ADD_TMP(1));
    return x + y + z + (u > 1u) + SQUARE(tmp);
}

int labels(int n) {
    int acc = 0;
    if (n < 0) goto fail;
    acc = n * 3;
    goto done;
fail:
    acc = -1;
done:
    return acc;
}

int statics(void) {
    static int calls = 0;
    static const char name[] = "abc";
    int arr[N] = {0};
    calls += 1;
    arr[2] = 9;
    return calls * 100 + (int) strlen(name) + arr[2] + (int) sizeof(arr) / 4;
}

int main(void) {
    struct node c3 = {3, NULL}, c2 = {2, &c3}, c1 = {1, &c2};
    struct flags fl = {5, 17};
    char *p = 0;
    int i;
    printf("%d %d\n", helper(5), apply(helper, 4));
    printf("%d %d\n", old_style(4, 2), sum_list(&c1));
    for (i = 0; i < 4; i++) printf("%d ", dangling(i & 1, i & 2));
    printf("\n%d %d\n", loops(7), loops(0));
    printf("%u\n", arith(3u, 4, 5));
    printf("%d %d\n", labels(4), labels(-2));
    printf("%d %d\n", statics(), statics());
    printf("%d %d %d %d\n", fl.a, fl.b, RED + BLUE, table[2]);
    printf("%s\n", p == 0 ? "null" : "set");
    return 0;
}
