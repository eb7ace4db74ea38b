public class Algo {
    static long gcd(long a, long b) {
        while (b != 0) { long t = a % b; a = b; b = t; }
        return a;
    }

    static int binarySearch(int[] arr, int key) {
        int lo = 0, hi = arr.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (arr[mid] < key) lo = mid + 1;
            else if (arr[mid] > key) hi = mid - 1;
            else return mid;
        }
        return -(lo + 1);
    }

    static String reverse(String s) {
        StringBuilder sb = new StringBuilder();
        for (int i = s.length() - 1; i >= 0; i--) sb.append(s.charAt(i));
        return sb.toString();
    }

    static int[] sieve(int n) {
        boolean[] composite = new boolean[n + 1];
        int count = 0;
        for (int i = 2; i <= n; i++) {
            if (composite[i]) continue;
            count++;
            for (int j = i * i; j <= n; j += i) composite[j] = true;
        }
        int[] primes = new int[count];
        int k = 0;
        for (int i = 2; i <= n; i++) if (!composite[i]) primes[k++] = i;
        return primes;
    }

    public static void main(String[] args) {
        int[] data = {1, 3, 5, 7, 9, 11};
        System.out.println(gcd(1071, 462) + " " + binarySearch(data, 7) + " " + binarySearch(data, 4));
        System.out.println(reverse("metacompress"));
        int[] ps = sieve(40);
        int sum = 0;
        for (int p : ps) sum += p;
        System.out.println(ps.length + " " + sum);
    }
}
