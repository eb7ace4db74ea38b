#include <stdio.h>

static long gcd(long a, long b) {
    while (b != 0) { long t = a % b; a = b; b = t; }
    return a;
}

static int is_prime(int n) {
    int d;
    if (n < 2) return 0;
    for (d = 2; d * d <= n; d++) {
        if (n % d == 0) return 0;
    }
    return 1;
}

static void bubble(int *a, int n) {
    int i, j, swapped;
    for (i = 0; i < n - 1; i++) {
        swapped = 0;
        for (j = 0; j < n - 1 - i; j++) {
            if (a[j] > a[j + 1]) { int t = a[j]; a[j] = a[j + 1]; a[j + 1] = t; swapped = 1; }
        }
        if (!swapped) break;
    }
}

static unsigned hash(const char *s) {
    unsigned h = 5381u;
    while (*s) { h = ((h << 5) + h) + (unsigned char) *s; s++; }
    return h;
}

int main(void) {
    int a[8] = {5, 3, 9, 1, 7, 2, 8, 6};
    int i, count = 0;
    bubble(a, 8);
    for (i = 0; i < 8; i++) printf("%d%c", a[i], i == 7 ? '\n' : ',');
    for (i = 0; i < 50; i++) if (is_prime(i)) count++;
    printf("%d %ld %u\n", count, gcd(1071, 462), hash("metacompress"));
    return 0;
}
