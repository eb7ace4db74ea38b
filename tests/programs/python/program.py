"""A small program exercising Python scoping and control flow."""

from __future__ import annotations

import math

COUNTER = 0


def bump(step=1):
    global COUNTER
    COUNTER += step
    return COUNTER


def make_adder(base):
    total = base

    def add(x):
        nonlocal total
        total += x
        return total

    return add


def loops(n):
    acc = 0
    calls = []

    def limit():
        calls.append(1)
        return n

    for i in range(limit()):
        if i % 3 == 0:
            continue
        acc += i
    else:
        acc += 100
    for j in range(2, 10, 3):
        if j > 6:
            break
    else:
        acc -= 1000
    k = 0
    while k < n:
        k += 2
    return acc, i, j, k, len(calls)


def classify(x):
    if x < 0:
        kind = "neg"
    elif x == 0:
        kind = "zero"
    elif 0 < x < 10:
        kind = "small"
    else:
        kind = "big"
    if x in (1, 2) or x is None:
        kind += "!"
    return kind


def strings_and_lists(items, sep=", "):
    text = "x"
    text += "y" * 2
    lst = [1]
    alias = lst
    lst += [2, 3]
    count = 0
    count += len(items)
    value = 7
    label = f"{value=} {count:>3} {text!r}"
    squares = [v * v for v in items if v % 2]
    return sep.join(str(s) for s in squares), alias, label, count


def matcher(cmd):
    match cmd:
        case 0:
            return "stop"
        case [1, rest]:
            return f"one {rest}"
        case _:
            return "other"


class Box:
    size = 3

    def __init__(self, width):
        self.width = width

    def area(self, scale=2):
        w = self.width
        w *= scale
        return w * self.size


def main():
    print(bump(), bump(step=3), COUNTER)
    add = make_adder(10)
    print(add(1), add(x=5))
    print(loops(7), loops(0) if False else loops(1))
    print([classify(v) for v in (-3, 0, 1, 5, 50)])
    print(strings_and_lists([1, 2, 3, 4, 5], sep="|"))
    print(matcher(0), matcher([1, 9]), matcher(3))
    print(Box(4).area(), Box(width=1).area(scale=5), round(math.sqrt(2), 4))


if __name__ == "__main__":
    main()
