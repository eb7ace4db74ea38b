import java.util.ArrayList;
import java.util.List;
import java.util.function.IntUnaryOperator;

public class Main {
    private int field = 3;
    private final String label;

    Main() { this("main"); }

    Main(String label) {
        super();
        this.label = label;
    }

    @Override
    public String toString() { return label + ":" + field; }

    static int fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }

    static int narrow() {
        byte b = 10;
        short s = 1000;
        char c = 'a';
        int i = 7;
        long l = 5L;
        float f = 1.5f;
        double d = 0.25;
        b += 120;
        s *= 40;
        c += 2;
        i += 3.7;
        i -= l;
        f += d;
        b++;
        s--;
        c++;
        l <<= 3;
        System.out.println(b + " " + s + " " + c + " " + i + " " + f + " " + l);
        return b + s + c + i;
    }

    static int loops(int n) {
        int total = 0;
        outer:
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                if (j > i) continue outer;
                if ((i + j) % 3 == 0) continue;
                total += i * j;
            }
        }
        for (int k = 0; k < n; k++) {
            if (k == 3) return total + k;
        }
        int w = 0;
        while (w < n) { w += 2; }
        return total + w;
    }

    static String branches(int x) {
        final int LIMIT = 4;
        switch (x) {
            case 1: return "one";
            case LIMIT: return "four";
            default: break;
        }
        if (x < 0) return "neg"; else if (x == 0) return "zero";
        if (x > 10) { return "big"; } else { return "small" + x; }
    }

    int useField(int delta) {
        field += delta;
        return this.field * 2 + helper(delta);
    }

    private int helper(int v) { return v * 10; }

    public static void main(String[] args) {
        Main m = new Main();
        System.out.println(m + " " + fact(6));
        System.out.println(narrow());
        System.out.println(loops(6) + " " + loops(2));
        for (int x = -1; x < 12; x += 4) System.out.print(branches(x) + ",");
        System.out.println();
        System.out.println(m.useField(2) + " " + m);
        List<Integer> xs = new ArrayList<Integer>();
        for (int i = 0; i < 5; i++) xs.add(i * i);
        IntUnaryOperator op = v -> v + 1;
        int acc = 0;
        for (int v : xs) { if (v < 10 && v > 0) acc += op.applyAsInt(v); }
        Runnable r = new Runnable() { public void run() { System.out.println("ran"); } };
        r.run();
        xs.forEach(Main::show);
        System.out.println(acc + " " + String.valueOf(3 < 4));
    }

    static void show(Integer v) { System.out.print(v + ";"); }
}
