// Ilonly.Pricing: a class library of the ilonly scenario (../ilonly.cs), built as plain IL by
// ../../sdk/Library.csproj.  A price list whose Recalculate calls back into the app for every
// entry (the app's callback never returns: it sleeps).
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;

namespace Ilonly.Pricing
{
    public struct Money
    {
        public long Cents;
        public string Currency;
        public Money(long cents, string currency) { Cents = cents; Currency = currency; }
    }

    public sealed class PriceEntry
    {
        public string Sku;
        public Money Price;
        public PriceEntry(string sku, Money price) { Sku = sku; Price = price; }
    }

    public sealed class PriceList
    {
        const MethodImplOptions Keep = MethodImplOptions.NoInlining | MethodImplOptions.NoOptimization;
        public readonly PriceEntry[] Entries;

        public PriceList(int n)
        {
            Entries = new PriceEntry[n];
            for (int i = 0; i < n; i++) Entries[i] = new PriceEntry("SKU-" + (1000 + i), new Money(199 + 100 * i, "EUR"));
        }

        [MethodImpl(Keep)]
        public long Quote(string sku, Func<Money, Money> adjust)
        {
            long total = 0;
            foreach (PriceEntry e in Entries)
                if (e.Sku == sku) total += Recalculate(e, adjust).Cents;
            return total;
        }

        [MethodImpl(Keep)]
        Money Recalculate(PriceEntry entry, Func<Money, Money> adjust)
        {
            Money m = adjust(entry.Price);
            entry.Price = m;
            return m;
        }
    }
}
