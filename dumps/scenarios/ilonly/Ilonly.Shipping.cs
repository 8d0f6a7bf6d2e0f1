// Ilonly.Shipping: a class library of the ilonly scenario (../ilonly.cs), built as plain IL by
// ../../sdk/Library.csproj.  A generic dispatcher the app instantiates over its own parcel type;
// Drain waits on a ManualResetEventSlim nobody sets.
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Threading;

namespace Ilonly.Shipping
{
    public sealed class Route
    {
        public string From, To;
        public Route(string from, string to) { From = from; To = to; }
    }

    public sealed class Dispatcher<TParcel> where TParcel : class
    {
        const MethodImplOptions Keep = MethodImplOptions.NoInlining | MethodImplOptions.NoOptimization;
        public readonly Queue<TParcel> Pending = new Queue<TParcel>();
        public readonly Route[] Routes = { new Route("AMS", "BER"), new Route("BER", "PRG"), new Route("PRG", "VIE") };
        readonly ManualResetEventSlim truckArrived = new ManualResetEventSlim(false);

        [MethodImpl(Keep)]
        public int Dispatch(TParcel parcel, Action blocking)
        {
            Pending.Enqueue(parcel);
            Drain(blocking);
            return Pending.Count;
        }

        [MethodImpl(Keep)]
        void Drain(Action blocking)
        {
            blocking();
            truckArrived.Wait();
        }
    }
}
