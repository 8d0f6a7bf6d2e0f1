// Ilonly.Inventory: a class library of the ilonly scenario (../ilonly.cs), built as plain IL by
// ../../sdk/Library.csproj.  A warehouse whose Reserve blocks in Monitor.Wait until stock arrives
// (it never does); `blocking` is the app's hook, called right before the wait.
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Threading;

namespace Ilonly.Inventory
{
    public sealed class StockItem
    {
        public string Sku;
        public int OnHand;
        public StockItem(string sku, int onHand) { Sku = sku; OnHand = onHand; }
    }

    public sealed class Warehouse
    {
        const MethodImplOptions Keep = MethodImplOptions.NoInlining | MethodImplOptions.NoOptimization;
        public readonly List<StockItem> Items = new List<StockItem>();
        public string Name;

        public Warehouse(string name, int items)
        {
            Name = name;
            for (int i = 0; i < items; i++) Items.Add(new StockItem("SKU-" + (1000 + i), i % 3));
        }

        [MethodImpl(Keep)]
        public int Reserve(string sku, int quantity, Action blocking)
        {
            StockItem item = Items.Find(x => x.Sku == sku);
            WaitForStock(item, quantity, blocking);
            return item.OnHand;
        }

        [MethodImpl(Keep)]
        void WaitForStock(StockItem item, int quantity, Action blocking)
        {
            lock (this)
            {
                blocking();
                while (item.OnHand < quantity) Monitor.Wait(this);
            }
        }
    }
}
